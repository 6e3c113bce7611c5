module example.com/magicmod

go 1.22
