/*
 * Word count reducer: reads `key<TAB>count` lines sorted by key and writes `key<TAB>sum` for
 * each run of equal keys. The key is everything before the first tab; the count is a decimal
 * integer, optionally signed, that fits in 64 bits. Sums wrap around like Java's long.
 *
 * Reads and writes through sluice_shm: shared memory under sluice, stdin and stdout elsewhere.
 */
#include "sluice_shm.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a count; returns 0, or -1 if text[0, len) is not a 64-bit decimal integer. */
static int parse_count(const char *text, size_t len, uint64_t *count)
{
    size_t i = 0;
    int negative = len > 0 && text[0] == '-';
    if (len > 0 && (text[0] == '-' || text[0] == '+'))
        i++;
    if (i == len)
        return -1;
    /* Accumulate the magnitude and check it against 2^63 (negative) or 2^63 - 1. */
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t value = 0;
    for (; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        unsigned digit = (unsigned)(text[i] - '0');
        if (value > (limit - digit) / 10)
            return -1;
        value = value * 10 + digit;
    }
    /* Two's complement, in unsigned arithmetic so that it cannot overflow. */
    *count = negative ? 0 - value : value;
    return 0;
}

/* Writes `key<TAB>sum`; sum holds a 64-bit two's complement value. */
static int emit(sluice_shm *s, const char *key, size_t key_len, uint64_t sum)
{
    char text[32];
    int len = snprintf(text, sizeof text, "\t%" PRId64 "\n",
                       sum > INT64_MAX ? -(int64_t)(~sum) - 1 : (int64_t)sum);
    return sluice_shm_write(s, key, key_len) != 0 || sluice_shm_write(s, text, (size_t)len) != 0
               ? -1
               : 0;
}

int main(void)
{
    sluice_shm *s = sluice_shm_open();
    size_t key_len = 0, key_cap = 64;
    char *key = malloc(key_cap); /* the current key, copied: a line lasts until the next read */
    if (key == NULL) {
        fprintf(stderr, "wc_reduce: out of memory\n");
        return 1;
    }
    int have_key = 0;
    uint64_t sum = 0;
    unsigned long long line_no = 0;
    const char *line;
    ptrdiff_t n;
    while ((n = sluice_shm_read_line(s, &line)) > 0) {
        line_no++;
        size_t len = (size_t)n - (line[n - 1] == '\n');
        const char *tab = memchr(line, '\t', len);
        uint64_t count;
        if (tab == NULL || parse_count(tab + 1, (size_t)(line + len - tab - 1), &count) != 0) {
            fprintf(stderr, "wc_reduce: line %llu is not `key<TAB>integer`\n", line_no);
            return 1;
        }
        size_t this_len = (size_t)(tab - line);
        if (have_key && this_len == key_len && memcmp(line, key, key_len) == 0) {
            sum += count;
            continue;
        }
        if (have_key && emit(s, key, key_len, sum) != 0)
            goto fail;
        if (this_len > key_cap) {
            key_cap = this_len * 2;
            free(key);
            if ((key = malloc(key_cap)) == NULL) {
                fprintf(stderr, "wc_reduce: out of memory\n");
                return 1;
            }
        }
        memcpy(key, line, this_len);
        key_len = this_len;
        have_key = 1;
        sum = count;
    }
    if (n < 0 || (have_key && emit(s, key, key_len, sum) != 0))
        goto fail;
    free(key);
    return sluice_shm_close(s) == 0 ? 0 : 1;
fail:
    fprintf(stderr, "wc_reduce: %s\n", sluice_shm_last_error(s));
    return 1;
}
