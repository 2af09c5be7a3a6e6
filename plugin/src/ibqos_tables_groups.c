/*
 * Admin-pinned dragonfly groups: `group GUID LABEL` pins one switch, `group_pattern REGEX`
 * takes the label from a switch's node description. The pattern is POSIX ERE, with two
 * spellings admins bring from other tools: `(?<group>` for `(` and `\d` for a digit.
 */
#define _POSIX_C_SOURCE 200809L
#include "ibqos_tables_parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NAMED_GROUP "(?<group>"
#define PATTERN_MAX_NODES 4096 /* a real node-description pattern needs tens */
#define PATTERN_MAX_DEPTH 8
#define PATTERN_MAX_REPS 32
#define SIZE_CAP (1u << 30)

static int label_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '.' || c == ':' || c == '-';
}

/* 1 if s[0..n) is a valid label: [A-Za-z0-9_.:-]{1,31} */
static int valid_label(const char *s, size_t n)
{
	if (n == 0 || n >= IBQOS_GROUP_LABEL_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!label_char(s[i]))
			return 0;
	return 1;
}

static int cmp_pin(const void *a, const void *b)
{
	const struct ibqos_group_pin *x = a, *y = b;

	return (x->guid > y->guid) - (x->guid < y->guid);
}

int tables_parse_group(struct parser *ps, char **tok, int ntok)
{
	struct ibqos_tables *t = ps->t;
	struct ibqos_group_pin pin = {.line = ps->line};
	unsigned first;
	int dup;

	if (ntok != 3)
		return tables_fail(ps, "group: expected 'group GUID LABEL'");
	if (ibqos_parse_guid(tok[1], &pin.guid))
		return tables_fail(ps,
				   "group: '%.40s' is not a GUID (0x followed by up to 16 hex "
				   "digits)",
				   tok[1]);
	if (!valid_label(tok[2], strlen(tok[2])))
		return tables_fail(ps, "group: label '%.40s' is not 1 to %d of A-Z a-z 0-9 _ . : -",
				   tok[2], IBQOS_GROUP_LABEL_MAX - 1);
	dup = ibqos_keyset_add(&ps->pins_seen, pin.guid, 0, ps->line, &first);
	if (dup < 0)
		return dup;
	if (dup)
		return tables_fail(ps,
				   "group: switch 0x%016" PRIx64 " pinned twice (first on line "
				   "%u)",
				   pin.guid, first);
	memcpy(pin.label, tok[2], strlen(tok[2]) + 1);
	if (t->npins == ps->cappins) {
		size_t cap = ps->cappins ? ps->cappins * 2 : 16;
		struct ibqos_group_pin *p = realloc(t->pins, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->pins = p;
		ps->cappins = cap;
	}
	t->pins[t->npins++] = pin;
	return 0;
}

/* Appends s to out (capacity checked by the caller: out holds 5 bytes per input byte). */
static char *put(char *o, const char *s)
{
	size_t n = strlen(s);

	memcpy(o, s, n);
	return o + n;
}

/* Length of a bracket expression's class/collating/equivalence term at s ("[:alpha:]"), or 0. */
static size_t bracket_term(const char *s)
{
	const char *end;
	char close[3] = {s[1], ']', '\0'};

	if (s[0] != '[' || (s[1] != ':' && s[1] != '.' && s[1] != '='))
		return 0;
	end = strstr(s + 2, close);
	return end ? (size_t)(end - s) + 2 : 0;
}

/*
 * ERE with the two extra spellings replaced: outside brackets `\d` -> `[0-9]`, inside them
 * `\d` -> `0-9`; `(?<group>` -> `(`. Other `(?` forms are refused with a reason (regcomp's own
 * "Invalid preceding regular expression" would not say why).
 */
static int translate(struct parser *ps, const char *src, char *out)
{
	char *o = out;
	int in_bracket = 0;

	for (const char *s = src; *s;) {
		if (in_bracket) {
			size_t term = bracket_term(s);

			if (term) {
				memcpy(o, s, term);
				o += term, s += term;
			} else if (s[0] == '\\' && s[1] == 'd') {
				o = put(o, "0-9"), s += 2;
			} else {
				in_bracket = *s != ']';
				*o++ = *s++;
			}
			continue;
		}
		if (!strncmp(s, NAMED_GROUP, strlen(NAMED_GROUP))) {
			*o++ = '(', s += strlen(NAMED_GROUP);
		} else if (s[0] == '(' && s[1] == '?') {
			return tables_fail(ps,
					   "group_pattern: '(?' is only understood as '" NAMED_GROUP
					   "'; write '(' for the label's group");
		} else if (s[0] == '\\' && s[1] == 'd') {
			o = put(o, "[0-9]"), s += 2;
		} else if (s[0] == '\\' && s[1] >= '1' && s[1] <= '9') {
			/* glibc matches back-references by backtracking: exponential time */
			return tables_fail(ps,
					   "group_pattern: back-references such as '\\%c' are not "
					   "supported",
					   s[1]);
		} else if (s[0] == '\\' && s[1]) {
			*o++ = *s++;
			*o++ = *s++;
		} else if (s[0] == '[') {
			*o++ = *s++;
			if (*s == '^')
				*o++ = *s++;
			if (*s == ']') /* a leading ']' is a literal member */
				*o++ = *s++;
			in_bracket = 1;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return 0;
}

static unsigned sat_mul(unsigned a, unsigned b)
{
	return b && a > SIZE_CAP / b ? SIZE_CAP : a * b;
}

static unsigned sat_add(unsigned a, unsigned b)
{
	return a > SIZE_CAP - b ? SIZE_CAP : a + b;
}

/* Skips "{m}", "{m,}" or "{m,n}" at s; *times = how many copies regcomp makes of the atom. */
static const char *interval(const char *s, unsigned *times)
{
	unsigned m = 0, n = 0;
	int comma = 0, digits_n = 0;

	for (s++; *s >= '0' && *s <= '9'; s++)
		m = m < 100000 ? m * 10 + (unsigned)(*s - '0') : m;
	if (*s == ',') {
		comma = 1;
		for (s++; *s >= '0' && *s <= '9'; s++, digits_n = 1)
			n = n < 100000 ? n * 10 + (unsigned)(*s - '0') : n;
	}
	*times = !comma ? m : digits_n ? (n > m ? n : m) : m + 1;
	if (!*times)
		*times = 1;
	return *s == '}' ? s + 1 : s;
}

/*
 * regcomp's cost is not linear in the pattern: glibc copies the atom of X+ twice and of X{m,n}
 * n times (nested repetitions multiply), and its epsilon closures grow exponentially on stacked
 * operators. The fuzzer found `a++++…` taking gigabytes and `x?????????+++++` minutes. So the
 * pattern is measured before it is compiled: no repetition of a repetition, groups at most
 * PATTERN_MAX_DEPTH deep, at most PATTERN_MAX_REPS operators, and an upper bound of the nodes
 * regcomp builds. A real node-description pattern is far inside all four.
 */
static const char *too_complex(const char *s, char *why, size_t len)
{
	unsigned total[PATTERN_MAX_DEPTH + 1], last[PATTERN_MAX_DEPTH + 1], d = 0, times;
	unsigned reps = 0;
	int after_rep = 0;

	total[0] = last[0] = 0;
	while (*s) {
		int rep = *s == '+' || *s == '*' || *s == '?' || *s == '{';

		if (rep && after_rep) {
			snprintf(why, len, "repetition of a repetition at '%.8s'", s);
			return why;
		}
		if (rep && ++reps > PATTERN_MAX_REPS) {
			snprintf(why, len, "more than %d repetition operators", PATTERN_MAX_REPS);
			return why;
		}
		after_rep = rep;
		if (*s == '(') {
			if (d == PATTERN_MAX_DEPTH) {
				snprintf(why, len, "groups nested deeper than %d",
					 PATTERN_MAX_DEPTH);
				return why;
			}
			total[++d] = 0, last[d] = 0, s++;
		} else if (*s == ')' && d > 0) {
			unsigned group = sat_add(sat_add(total[d], last[d]), 1);

			d--;
			total[d] = sat_add(total[d], last[d]);
			last[d] = group;
			s++;
		} else if (*s == '|') {
			total[d] = sat_add(sat_add(total[d], last[d]), 1);
			last[d] = 0, s++;
		} else if (*s == '+') {
			last[d] = sat_add(sat_mul(last[d], 2), 1), s++;
		} else if (*s == '*' || *s == '?') {
			last[d] = sat_add(last[d], 1), s++;
		} else if (*s == '{') {
			s = interval(s, &times);
			last[d] = sat_add(sat_mul(last[d], times), 1);
		} else {
			size_t term;

			total[d] = sat_add(total[d], last[d]);
			last[d] = 1;
			if (*s == '\\' && s[1]) {
				s += 2;
			} else if (*s == '[') { /* one node, however long */
				s++;
				if (*s == '^')
					s++;
				if (*s == ']')
					s++;
				while (*s && *s != ']')
					s += (term = bracket_term(s)) ? term : 1;
				s += *s == ']';
			} else {
				s++;
			}
		}
	}
	while (d > 0) {
		unsigned group = sat_add(total[d], last[d]);

		d--;
		total[d] = sat_add(sat_add(total[d], last[d]), group);
		last[d] = 0;
	}
	if (sat_add(total[0], last[0]) > PATTERN_MAX_NODES) {
		snprintf(why, len, "its repetitions expand to more than %d nodes",
			 PATTERN_MAX_NODES);
		return why;
	}
	return NULL;
}

int tables_parse_group_pattern(struct parser *ps, char *rest)
{
	struct ibqos_tables *t = ps->t;
	size_t n;
	char *ere, why[200];
	int r;

	rest += strspn(rest, " \t");
	n = strlen(rest);
	while (n && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
		rest[--n] = '\0';
	if (!n)
		return tables_fail(ps, "group_pattern: missing the pattern");
	if (t->pattern)
		return tables_fail(ps, "group_pattern given twice (first on line %u)",
				   t->pattern_line);
	ere = malloc(5 * n + 1);
	t->pattern_text = strdup(rest);
	t->pattern = calloc(1, sizeof(*t->pattern));
	if (!ere || !t->pattern_text || !t->pattern) {
		free(ere);
		free(t->pattern); /* not compiled: nothing for regfree */
		t->pattern = NULL;
		return -ENOMEM;
	}
	if (translate(ps, rest, ere)) {
		free(ere);
		free(t->pattern);
		t->pattern = NULL;
		return -EINVAL;
	}
	if (too_complex(ere, why, sizeof(why))) {
		free(ere);
		free(t->pattern);
		t->pattern = NULL;
		return tables_fail(ps, "group_pattern: '%.80s' is too complex: %s", rest, why);
	}
	r = regcomp(t->pattern, ere, REG_EXTENDED);
	free(ere);
	if (r) {
		regerror(r, t->pattern, why, sizeof(why));
		free(t->pattern);
		t->pattern = NULL;
		return tables_fail(ps, "group_pattern: '%.80s' does not compile: %s", rest, why);
	}
	t->pattern_line = ps->line;
	if (t->pattern->re_nsub == 0)
		return tables_fail(ps,
				   "group_pattern: '%.80s' has no parenthesised subexpression "
				   "to take the group label from",
				   rest);
	return 0;
}

void tables_free_groups(struct ibqos_tables *t)
{
	if (t->pattern) {
		regfree(t->pattern);
		free(t->pattern);
	}
	free(t->pattern_text);
	free(t->pins);
	t->pattern = NULL;
	t->pattern_text = NULL;
	t->pins = NULL;
	t->npins = 0;
}

void tables_sort_pins(struct ibqos_tables *t)
{
	if (t->npins)
		qsort(t->pins, t->npins, sizeof(*t->pins), cmp_pin);
}

int ibqos_tables_group_label(const struct ibqos_tables *t, uint64_t guid, const char *desc,
			     char *label, size_t len)
{
	struct ibqos_group_pin key = {.guid = guid};
	const struct ibqos_group_pin *hit = NULL;
	regmatch_t m[2];
	size_t n;

	if (t->npins)
		hit = bsearch(&key, t->pins, t->npins, sizeof(*t->pins), cmp_pin);
	if (hit) {
		n = strlen(hit->label);
		if (n >= len)
			return 0;
		memcpy(label, hit->label, n + 1);
		return 1;
	}
	if (!t->pattern || !desc || regexec(t->pattern, desc, 2, m, 0) || m[1].rm_so < 0)
		return 0;
	n = (size_t)(m[1].rm_eo - m[1].rm_so);
	if (!valid_label(desc + m[1].rm_so, n) || n >= len)
		return 0;
	memcpy(label, desc + m[1].rm_so, n);
	label[n] = '\0';
	return 1;
}

int ibqos_tables_has_group_pins(const struct ibqos_tables *t)
{
	return t->npins > 0 || t->pattern != NULL;
}
