module example.com/nested

go 1.24

require example.com/realshapes v0.0.0

replace example.com/realshapes => ../
