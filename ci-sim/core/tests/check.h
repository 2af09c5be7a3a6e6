/* Minimal test helpers: a failure counter and an EXPECT macro, no framework. */
#ifndef IBS_CHECK_H
#define IBS_CHECK_H

#include <stdio.h>

static int failures;

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define EXPECT_NEAR(a, b, tol)                                                                     \
	do {                                                                                       \
		double a_ = (a), b_ = (b);                                                         \
		if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol))) {                                     \
			fprintf(stderr, "%s:%d: %s = %.6f, want %.6f +- %g\n", __FILE__, __LINE__, \
				#a, a_, b_, (double)(tol));                                        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define TEST_DONE()                                                                                \
	do {                                                                                       \
		if (failures)                                                                      \
			fprintf(stderr, "%d failure(s)\n", failures);                              \
		return failures ? 1 : 0;                                                           \
	} while (0)

#endif
