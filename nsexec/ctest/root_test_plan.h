// The smallest root plan root_plan_linux.c accepts (its header alone: no
// operation), for the init's tests (ctest/init_test.c).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "root_linux.h"

static const char *ward_test_root_plan(size_t *n) {
	static char plan[WARD_ROOT_HEADER];
	uint32_t version = WARD_ROOT_VERSION, size = WARD_ROOT_HEADER;
	int32_t id = 1000;
	memset(plan, 0, sizeof(plan));
	memcpy(plan, WARD_ROOT_MAGIC, 8);
	memcpy(plan + 8, &version, 4);
	memcpy(plan + 12, &size, 4);
	memcpy(plan + 20, &id, 4);
	memcpy(plan + 24, &id, 4);
	*n = sizeof(plan);
	return plan;
}
