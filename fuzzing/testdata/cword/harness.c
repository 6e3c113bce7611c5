/* A record parser for fleetd's CmpLog test: it aborts on a record whose
 * 32-bit word at offset 3 equals a constant written in decimal, so no
 * source literal gives it away. Coverage alone must guess 32 bits at once;
 * CmpLog reads the comparison's operands and writes the constant in. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size < 8 || data[0] != 'W') {
		return 0;
	}
	uint32_t w;
	memcpy(&w, data + 3, sizeof w);
	if (w == 2050999009u) {
		abort(); /* the bug */
	}
	return 0;
}
