/*
 * Grep mapper: `grep_map REGEX` writes `match<TAB>1` for every match of the POSIX extended
 * regular expression REGEX in each line of its input, as Hadoop's RegexMapper does with Java's
 * Matcher.find: matches are found left to right without overlapping, and after an empty match
 * the search resumes one byte further. The line excludes its '\n'; it may contain any byte.
 * The syntax and matching are POSIX's, not Java's: leftmost-longest where Java is leftmost-first
 * (`a|ab` finds "ab"), and `$` matches only at the end of the line, not before a final '\r'.
 *
 * Reads and writes through sluice_shm: shared memory under sluice, stdin and stdout elsewhere.
 */
#define _GNU_SOURCE /* REG_STARTEND */

#include "sluice_shm.h"

#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: grep_map REGEX\n");
        return 2;
    }
    regex_t re;
    int rc = regcomp(&re, argv[1], REG_EXTENDED);
    if (rc != 0) {
        char why[256];
        regerror(rc, &re, why, sizeof why);
        fprintf(stderr, "grep_map: %s: %s\n", argv[1], why);
        return 2;
    }
    /* regexec's offsets are regoff_t, which glibc makes an int: longer lines cannot be searched. */
    const uintmax_t regoff_max = ((uintmax_t)1 << (sizeof(regoff_t) * CHAR_BIT - 1)) - 1;
    sluice_shm *s = sluice_shm_open();
    const char *line;
    ptrdiff_t n;
    while ((n = sluice_shm_read_line(s, &line)) > 0) {
        ptrdiff_t bytes = n - (line[n - 1] == '\n');
        if ((uintmax_t)bytes > regoff_max) {
            fprintf(stderr, "grep_map: a line of %td bytes is too long for regexec\n", bytes);
            return 1;
        }
        regoff_t len = (regoff_t)bytes;
        /*
         * REG_STARTEND delimits the search by offsets instead of a terminating NUL, so lines
         * may hold NULs and need no copy. The string still begins at the line's start, so `^`
         * matches only there, as in Java, and offsets are the line's.
         */
        for (regoff_t from = 0; from <= len;) {
            regmatch_t m = {.rm_so = from, .rm_eo = len};
            rc = regexec(&re, line, 1, &m, REG_STARTEND);
            if (rc == REG_NOMATCH)
                break;
            if (rc != 0) {
                char why[256];
                regerror(rc, &re, why, sizeof why);
                fprintf(stderr, "grep_map: %s\n", why);
                return 1;
            }
            if (sluice_shm_write(s, line + m.rm_so, (size_t)(m.rm_eo - m.rm_so)) != 0 ||
                sluice_shm_write(s, "\t1\n", 3) != 0)
                goto fail;
            from = m.rm_eo > m.rm_so ? m.rm_eo : m.rm_eo + 1;
        }
    }
    if (n < 0)
        goto fail;
    regfree(&re);
    return sluice_shm_close(s) == 0 ? 0 : 1;
fail:
    fprintf(stderr, "grep_map: %s\n", sluice_shm_last_error(s));
    return 1;
}
