/* A tiny record parser for fleetd's instrumented AFL++ test: it aborts
 * only on a record whose length field fits the input and whose next four
 * bytes are a magic number. Blind mutation must guess 32 bits at once;
 * an instrumented build sees each matched half as new coverage. */
#include <stdint.h>
#include <stdlib.h>
#include "parse.h"

int parse_record(const uint8_t *data, size_t size) {
	if (size < 8 || data[0] != 'R') {
		return -1;
	}
	uint16_t len = (uint16_t)(data[1] | data[2] << 8);
	if (len > size - 3) {
		return -1;
	}
	/* The magic, byte by byte, as many parsers check a signature. */
	static const uint8_t magic[4] = {0xe1, 0xc2, 0x3f, 0x7a};
	for (int i = 0; i < 4; i++) {
		if (data[3 + i] != magic[i]) {
			return i;
		}
	}
	abort(); /* the bug */
	return (int)len;
}
