#include <string.h>

#include "evq.h"

const struct ibs_evq_ops *ibs_evq_find(const char *name)
{
	static const struct ibs_evq_ops *const all[] = {&ibs_evq_calendar, &ibs_evq_heap,
							&ibs_evq_list};

	if (!name || !*name)
		return &ibs_evq_calendar;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
