package record_test

func osName() string { return "linux" }
