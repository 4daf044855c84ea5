/* Internal to the C host tests: CHECK(c) counts passes and failures and prints the failed
 * condition with noether_last_error(); the host ends with printf("%d passed, %d failed\n", ...). */
#ifndef NOETHER_TEST_C_CHECK_H
#define NOETHER_TEST_C_CHECK_H

#include <stdio.h>

#include "noether.h"

static int passed = 0, failed = 0;
#define CHECK(c)                                                                                         \
    do {                                                                                                 \
        if (c) ++passed;                                                                                 \
        else {                                                                                           \
            ++failed;                                                                                    \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (%s)\n", __FILE__, __LINE__, #c, noether_last_error()); \
        }                                                                                                \
    } while (0)

#endif
