/* parsefile FILE: parse one record from FILE (the compiler-style target). */
#include <stdio.h>
#include "parse.h"

int main(int argc, char **argv) {
	static uint8_t buf[1 << 16];
	if (argc != 2) {
		fprintf(stderr, "usage: parsefile FILE\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if (parse_record(buf, n) < 0) {
		fprintf(stderr, "parsefile: bad record\n");
		return 1;
	}
	return 0;
}
