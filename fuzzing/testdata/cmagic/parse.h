#include <stddef.h>
#include <stdint.h>
int parse_record(const uint8_t *data, size_t size);
