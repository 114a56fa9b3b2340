/*
 * Word count mapper: writes `word<TAB>1` for every word of its input. Words are split as by
 * Hadoop's WordCount (Java's StringTokenizer with its default delimiters): maximal runs of
 * bytes other than space, tab, newline, carriage return and form feed. Bytes are not decoded.
 *
 * Reads and writes through sluice_shm: shared memory under sluice, stdin and stdout elsewhere.
 */
#include "sluice_shm.h"

#include <stdio.h>
#include <stdlib.h>

static int is_delimiter(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

int main(void)
{
    sluice_shm *s = sluice_shm_open();
    const char *line;
    ptrdiff_t n;
    while ((n = sluice_shm_read_line(s, &line)) > 0) {
        const char *end = line + n;
        for (const char *p = line; p < end;) {
            while (p < end && is_delimiter(*p))
                p++;
            const char *word = p;
            while (p < end && !is_delimiter(*p))
                p++;
            if (p > word && (sluice_shm_write(s, word, (size_t)(p - word)) != 0 ||
                             sluice_shm_write(s, "\t1\n", 3) != 0))
                goto fail;
        }
    }
    if (n < 0)
        goto fail;
    return sluice_shm_close(s) == 0 ? 0 : 1;
fail:
    fprintf(stderr, "wc_map: %s\n", sluice_shm_last_error(s));
    return 1;
}
