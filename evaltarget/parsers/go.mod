module github.com/qafleet/fleetd/evaltarget/parsers

go 1.26

require (
	github.com/russross/blackfriday/v2 v2.1.0
	golang.org/x/net v0.0.0-20180724234803-3673e40ba225
)
