/* counters.c — names of drop reasons, classes and directions. */
#include "core/counters.h"

static const char *const drop_names[] = {
#define JK_DROP_NAME(e, n, d) n,
	JK_DROP_REASONS(JK_DROP_NAME)
#undef JK_DROP_NAME
};

static const char *const drop_descs[] = {
#define JK_DROP_DESC(e, n, d) d,
	JK_DROP_REASONS(JK_DROP_DESC)
#undef JK_DROP_DESC
};

static const char *const class_names[JK_CLASS__COUNT] = { "rdma", "tcp", "other" };
static const char *const dir_names[JK_DIR__COUNT] = { "egress", "ingress" };

const char *jk_drop_name(unsigned reason)
{
	return reason < JK_DROP__COUNT ? drop_names[reason] : "?";
}

const char *jk_drop_desc(unsigned reason)
{
	return reason < JK_DROP__COUNT ? drop_descs[reason] : "?";
}

const char *jk_class_name(unsigned cls)
{
	return cls < JK_CLASS__COUNT ? class_names[cls] : "?";
}

const char *jk_dir_name(unsigned dir)
{
	return dir < JK_DIR__COUNT ? dir_names[dir] : "?";
}
