/* libFuzzer-style harness: AFL++ links it with -fsanitize=fuzzer for
 * persistent mode. */
#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	parse_record(data, size);
	return 0;
}
