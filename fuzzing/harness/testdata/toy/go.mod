module example.com/toy

go 1.12
