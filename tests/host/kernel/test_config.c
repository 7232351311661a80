/* kernel/config.c: the CMDLINE_PARAM linker set as the boot parses it. The
 * keys below are registered exactly as modules register theirs (the host's
 * linker bounds the vireo_cmdline section); one key is registered twice on
 * purpose, so config_check() always has that to report. Also the per-key
 * validator, the default check and the `params` listing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/boot_info.h"
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "tests/host/shim/hostk.h"

/* ---- the console: the host shim keeps kprintf lines for the assertions ---- */

#define nout ((int)hk_kprintf_count())
#define out(i) hk_log_line(i)

static int find_out(const char *needle)
{
	for (int i = 0; i < nout; i++)
		if (strstr(out((unsigned)i), needle))
			return i;
	return -1;
}

/* ---- the keys ---- */

static bool p_flag;
CMDLINE_PARAM(flag, .key = "t.flag", .type = CMDLINE_BOOL, .dst = &p_flag, .def = "off", .help = "a switch");

static u64 p_count = 7;
CMDLINE_PARAM(count, .key = "t.count", .type = CMDLINE_UINT, .dst = &p_count, .min = 1, .max = 100, .def = "7",
	      .help = "a bounded number");

static u64 p_mask = 0xff;
CMDLINE_PARAM(mask, .key = "t.mask", .type = CMDLINE_HEX, .dst = &p_mask, .def = "0xff", .help = "a mask");

static const char *const mode_choices[] = { "slow", "fast", "auto", NULL };
static int p_mode = 2;
CMDLINE_PARAM(mode, .key = "t.mode", .type = CMDLINE_ENUM, .dst = &p_mode, .choices = mode_choices, .def = "auto",
	      .help = "a choice");

static char p_name[8] = "vireo";
CMDLINE_PARAM(name, .key = "t.name", .type = CMDLINE_STR, .dst = p_name, .dst_size = sizeof p_name, .def = "vireo",
	      .help = "a short name");

static int even_calls;
static int validate_even(const void *val, char *why, size_t why_len)
{
	u64 v = *(const u64 *)val;

	even_calls++;
	if (v & 1) {
		snprintf(why, why_len, "%llu is odd", (unsigned long long)v);
		return -EINVAL;
	}
	return 0;
}
static u64 p_even = 4;
CMDLINE_PARAM(even, .key = "t.even", .type = CMDLINE_UINT, .dst = &p_even, .max = 1000, .validate = validate_even,
	      .def = "4", .help = "an even number");

static u64 p_pair;
static int parse_pair(const char *val, void *dst, char *why, size_t why_len)
{
	if (strcmp(val, "a,b")) {
		snprintf(why, why_len, "want a,b");
		return -EINVAL;
	}
	*(u64 *)dst = 1;
	return 0;
}
CMDLINE_PARAM(pair, .key = "t.pair", .type = CMDLINE_CUSTOM, .dst = &p_pair, .parse = parse_pair, .def = "none",
	      .values = "a,b", .help = "a custom syntax");

/* The same key twice: the parser takes whichever the section holds first
 * (link order across files; within a file the compiler's order). */
static u64 p_dup_a = 1, p_dup_b = 1;
CMDLINE_PARAM(dup_a, .key = "t.dup", .type = CMDLINE_UINT, .dst = &p_dup_a, .def = "1", .help = "one");
CMDLINE_PARAM(dup_b, .key = "t.dup", .type = CMDLINE_UINT, .dst = &p_dup_b, .def = "1", .help = "two");

#define NKEYS 9

static int reset(void **state)
{
	(void)state;
	p_flag = false;
	p_count = 7;
	p_mask = 0xff;
	p_mode = 2;
	strcpy(p_name, "vireo");
	p_even = 4;
	p_pair = 0;
	p_dup_a = p_dup_b = 1;
	even_calls = 0;
	hk_log_reset();
	config_reset_origins();
	return 0;
}

static struct {
	int n;
	char msg[8][200];
} w;

static void collect(void *ctx, const char *msg)
{
	(void)ctx;
	if (w.n < 8)
		snprintf(w.msg[w.n], sizeof w.msg[0], "%s", msg);
	w.n++;
}

static void test_table_is_the_linker_set(void **state)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);
	bool seen_count = false;

	assert_int_equal(n, NKEYS);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(set[i]);
		assert_non_null(set[i]->key);
		if (!strcmp(set[i]->key, "t.count")) {
			seen_count = true;
			assert_ptr_equal(set[i]->dst, &p_count);
			assert_int_equal(set[i]->type, CMDLINE_UINT);
			assert_string_equal(set[i]->def, "7");
		}
	}
	assert_true(seen_count);
}

/* Nothing on the line: every key keeps its default. */
static void test_defaults_stay(void **state)
{
	int warns = config_parse("");

	assert_int_equal(warns, 1);	/* the duplicate, reported by the check */
	assert_false(p_flag);
	assert_int_equal(p_count, 7);
	assert_int_equal(p_mask, 0xff);
	assert_int_equal(p_mode, 2);
	assert_string_equal(p_name, "vireo");
	assert_int_equal(p_even, 4);
	assert_int_equal(p_pair, 0);
}

static void test_every_type_parses(void **state)
{
	int warns = config_parse("t.flag t.count=100 t.mask=0x1f t.mode=slow t.name=abc t.even=10 t.pair=a,b");

	assert_int_equal(warns, 1);	/* the duplicate only */
	assert_true(p_flag);
	assert_int_equal(p_count, 100);
	assert_int_equal(p_mask, 0x1f);
	assert_int_equal(p_mode, 0);
	assert_string_equal(p_name, "abc");
	assert_int_equal(p_even, 10);
	assert_int_equal(p_pair, 1);
}

/* Bad values warn on the console and keep the default; the boot goes on. */
static void test_bad_values_keep_defaults(void **state)
{
	int warns = config_parse("t.count=0 t.count=101 t.mask=xyz t.mode=warp t.name=toolongname t.pair=b,a bogus=1");

	assert_int_equal(warns, 1 + 7);
	assert_int_equal(p_count, 7);
	assert_int_equal(p_mask, 0xff);
	assert_int_equal(p_mode, 2);
	assert_string_equal(p_name, "vireo");
	assert_int_equal(p_pair, 0);
	assert_true(find_out("warning: cmdline: t.count=0: expected 1..100, keeping default") >= 0);
	assert_true(find_out("warning: cmdline: t.mode=warp: expected slow|fast|auto, keeping default") >= 0);
	assert_true(find_out("warning: cmdline: t.pair=b,a: want a,b, keeping default") >= 0);
	assert_true(find_out("warning: cmdline: unknown key 'bogus' ignored") >= 0);
}

/* The validator sees the parsed number after the range check, and a
 * rejection keeps the default with its reason in the warning. */
static void test_validator_rejects(void **state)
{
	int warns = config_parse("t.even=7");

	assert_int_equal(warns, 2);
	assert_int_equal(even_calls, 1 + 1);	/* the default check, then 7 */
	assert_int_equal(p_even, 4);
	assert_true(find_out("warning: cmdline: t.even=7: 7 is odd, keeping default") >= 0);
	/* Out of range: the type's check refuses it before the validator. */
	even_calls = 0;
	assert_int_equal(config_parse("t.even=1002"), 2);
	assert_int_equal(even_calls, 1);	/* the default check only */
	assert_int_equal(p_even, 4);
	assert_int_equal(config_parse("t.even=8"), 1);
	assert_int_equal(p_even, 8);
}

/* The t.dup entry the section holds first. */
static const struct cmdline_opt *first_dup(void)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(set[i]->key, "t.dup"))
			return set[i];
	return NULL;
}

static void test_duplicate_key_reported_first_wins(void **state)
{
	const struct cmdline_opt *first = first_dup();

	assert_non_null(first);
	assert_int_equal(config_check(collect, NULL), 1);
	assert_string_equal(w.msg[0], "cmdline: key 't.dup' is registered twice; the second is ignored");
	w.n = 0;
	assert_int_equal(config_parse("t.dup=5"), 1);
	assert_int_equal(*(u64 *)first->dst, 5);
	assert_int_equal(p_dup_a + p_dup_b, 5 + 1);	/* the other kept its value */
}

/* A default text must be what the variable holds: the check catches a
 * table that drifted from its variable, for every checked type. */
static void test_default_check(void **state)
{
	static u64 n = 5;
	static bool b = true;
	static int e = 1;
	static char s[8] = "x";
	struct cmdline_opt o = { .key = "k", .type = CMDLINE_UINT, .dst = &n, .def = "5", .help = "h" };

	assert_true(cmdline_default_ok(&o));
	o.def = "6";
	assert_false(cmdline_default_ok(&o));
	o.def = "five";
	assert_false(cmdline_default_ok(&o));
	o.def = "5";
	o.max = 4;		/* a default outside its own range */
	assert_false(cmdline_default_ok(&o));
	o.def = "five";
	o.def_prose = true;	/* said to be prose: not compared */
	assert_true(cmdline_default_ok(&o));

	o = (struct cmdline_opt){ .key = "k", .type = CMDLINE_BOOL, .dst = &b, .def = "on" };
	assert_true(cmdline_default_ok(&o));
	o.def = "off";
	assert_false(cmdline_default_ok(&o));
	o = (struct cmdline_opt){ .key = "k", .type = CMDLINE_ENUM, .dst = &e, .choices = mode_choices, .def = "fast" };
	assert_true(cmdline_default_ok(&o));
	o.def = "slow";
	assert_false(cmdline_default_ok(&o));
	o = (struct cmdline_opt){ .key = "k", .type = CMDLINE_STR, .dst = s, .dst_size = sizeof s, .def = "x" };
	assert_true(cmdline_default_ok(&o));
	o.def = "y";
	assert_false(cmdline_default_ok(&o));
	o = (struct cmdline_opt){ .key = "k", .type = CMDLINE_CUSTOM, .parse = parse_pair, .def = "anything" };
	assert_true(cmdline_default_ok(&o));
	/* The validator applies to the default too. */
	o = (struct cmdline_opt){ .key = "k", .type = CMDLINE_UINT, .dst = &n, .def = "5", .validate = validate_even };
	assert_false(cmdline_default_ok(&o));
}

static void test_values_described(void **state)
{
	char buf[64];
	struct cmdline_opt o = { .type = CMDLINE_UINT, .min = 1, .max = 100 };

	cmdline_describe_values(&o, ", ", buf, sizeof buf);
	assert_string_equal(buf, "1-100");
	o.max = 0;
	cmdline_describe_values(&o, ", ", buf, sizeof buf);
	assert_string_equal(buf, "at least 1");
	o = (struct cmdline_opt){ .type = CMDLINE_ENUM, .choices = mode_choices };
	cmdline_describe_values(&o, "|", buf, sizeof buf);
	assert_string_equal(buf, "slow|fast|auto");
	cmdline_describe_values(&o, ", ", buf, 8);
	assert_string_equal(buf, "slow...");
	o = (struct cmdline_opt){ .type = CMDLINE_BOOL };
	cmdline_describe_values(&o, ", ", buf, sizeof buf);
	assert_string_equal(buf, "bool");
	o.values = "given";
	cmdline_describe_values(&o, ", ", buf, sizeof buf);
	assert_string_equal(buf, "given");
}

/* `params`: one line per key, sorted by key, the duplicate listed once. */
static void test_print_sorted(void **state)
{
	static const char *const want[] = {
		"  t.count=1-100 (default 7): a bounded number\n",
		NULL,	/* t.dup: the first registered's help */
		"  t.even=0-1000 (default 4): an even number\n",
		"  t.flag=bool (default off): a switch\n",
		"  t.mask=hex number (default 0xff): a mask\n",
		"  t.mode=slow, fast, auto (default auto): a choice\n",
		"  t.name=text, at most 7 characters (default vireo): a short name\n",
		"  t.pair=a,b (default none): a custom syntax\n",
	};

	char dup[128];

	snprintf(dup, sizeof dup, "  t.dup=at least 0 (default 1): %s\n", first_dup()->help);
	config_print_params();
	/* Each line comes in two writes: head, then help and newline. */
	assert_int_equal(nout, 2 * (sizeof want / sizeof want[0]));
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *line = want[i] ? want[i] : dup;
		size_t head = strlen(out(2 * i));

		assert_true(head < strlen(line));
		assert_memory_equal(out(2 * i), line, head);
		assert_string_equal(out(2 * i + 1), line + head);
	}
}

/* ---- the sources in order: defaults, the file, the command line ---- */

static const struct cmdline_opt *key_opt(const char *key)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(set[i]->key, key))
			return set[i];
	return NULL;
}

/* Later wins; a bad value keeps the earlier source's value and says so,
 * with the default; the origin log names each source. */
static void test_sources_in_order(void **state)
{
	static const char file[] = "t.count=50\nt.mode=fast\nt.name=file\n";

	assert_int_equal(config_apply_file("vireo.cfg", file, sizeof file - 1), 0);
	assert_int_equal(config_apply_cmdline("cmdline (test)", "t.count=0 t.mode=slow t.flag"), 1);
	assert_int_equal(p_count, 50);
	assert_int_equal(p_mode, 0);
	assert_string_equal(p_name, "file");
	assert_true(p_flag);
	assert_true(find_out("warning: cmdline: t.count=0: expected 1..100, keeping 50 from vireo.cfg (default 7)") >= 0);
	assert_string_equal(config_origin(key_opt("t.count")), "vireo.cfg");
	assert_string_equal(config_origin(key_opt("t.mode")), "cmdline (test)");
	assert_string_equal(config_origin(key_opt("t.flag")), "cmdline (test)");
	assert_null(config_origin(key_opt("t.mask")));

	hk_log_reset();
	config_print_origins();
	assert_true(find_out("config: t.count=50 (from vireo.cfg)") >= 0);
	assert_true(find_out("config: t.mode=slow (from cmdline (test))") >= 0);
	assert_true(find_out("config: t.name=file (from vireo.cfg)") >= 0);
	assert_true(find_out("config: t.flag=1 (from cmdline (test))") >= 0);
	assert_true(find_out("t.mask") < 0);
	assert_int_equal(nout, 4);
}

/* A bad value in the file keeps the default and names it; a repeated key
 * in the file is noted, and the later line wins. */
static void test_file_bad_value_and_repeat(void **state)
{
	static const char file[] = "t.count=1000\nt.even=2\nt.even=6\nbogus=1\n";

	assert_int_equal(config_apply_file("vireo.cfg", file, sizeof file - 1), 2);
	assert_true(find_out("warning: vireo.cfg line 1: t.count=1000: expected 1..100, keeping default 7") >= 0);
	assert_true(find_out("config: vireo.cfg line 3: t.even was set on an earlier line; the later value wins") >= 0);
	assert_true(find_out("warning: vireo.cfg line 4: unknown key 'bogus' ignored") >= 0);
	assert_int_equal(p_count, 7);
	assert_int_equal(p_even, 6);
}

/* A value longer than the origin log keeps is cut, marked. */
static void test_origin_text_cut(void **state)
{
	static const char file[] = "t.pair=a,b\n";

	assert_int_equal(config_apply_file("vireo.cfg", file, sizeof file - 1), 0);
	assert_int_equal(config_apply_cmdline("c", "t.pair=b,a"), 1);
	assert_true(find_out("warning: cmdline: t.pair=b,a: want a,b, keeping a,b from vireo.cfg (default none)") >= 0);
	hk_log_reset();
	assert_int_equal(config_apply_cmdline("c", "t.mask=0x00000000000000000000000000000000000000000000000000000000000001"), 0);
	config_print_origins();
	assert_true(find_out("config: t.mask=0x000000000000000000000000000000000000000000... (from c)") >= 0);
}

/* EFI/vireo/vireo.cfg as boot/ leaves it: in a buffer of its cap. */
static char cfg_buf[BOOT_CFG_MAX];

static struct boot_info *new_bi(u32 state, const char *cfg, const char *cmdline)
{
	struct boot_info *bi = calloc(1, sizeof *bi);
	struct boot_file *f = &bi->files[BOOT_FILE_CFG];

	f->state = state;
	memset(cfg_buf, 0, sizeof cfg_buf);
	if (cfg) {
		f->len = strlen(cfg);
		memcpy(cfg_buf, cfg, f->len);
		f->base = (u64)(uintptr_t)cfg_buf;
	}
	snprintf(bi->cmdline, sizeof bi->cmdline, "%s", cmdline);
	snprintf(bi->cmdline_src, sizeof bi->cmdline_src, "fw_cfg");
	return bi;
}

/* config_boot: the file's state, then the command line, then the origins. */
static void test_boot_file_then_cmdline(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_OK, "t.count=9\nt.mask=0x1\n", "t.mask=0x2");
	int file_line, cmd_line, origin;

	/* the table's own duplicate (t.dup) is one warning */
	assert_int_equal(config_boot(bi), 1);
	assert_int_equal(p_count, 9);
	assert_int_equal(p_mask, 2);
	file_line = find_out("config: EFI/vireo/vireo.cfg: 21 bytes");
	cmd_line = find_out("cmdline (fw_cfg): t.mask=0x2");
	origin = find_out("config: t.mask=0x2 (from cmdline (fw_cfg))");
	assert_true(file_line >= 0 && cmd_line > file_line && origin > cmd_line);
	assert_true(find_out("config: t.count=9 (from vireo.cfg)") >= 0);
	assert_true(find_out("config: 1 warning, those keys keep their earlier values") >= 0);
	free(bi);
}

static void test_boot_file_states(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_TOO_BIG, "t.count=9\n", "");

	/* boot/ refused it for its size: the generic line (name, size, cap)
	 * for any file, then the configuration's own. */
	snprintf(bi->files[BOOT_FILE_CFG].path, sizeof bi->files[BOOT_FILE_CFG].path, BOOT_CFG_PATH);
	bi->files[BOOT_FILE_CFG].len = 20000;
	bi->files[BOOT_FILE_CFG].cap = BOOT_CFG_MAX;
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("boot: EFI/vireo/vireo.cfg refused: 20000 bytes or more, cap 16384") >= 0);
	assert_true(find_out("warning: vireo.cfg: EFI/vireo/vireo.cfg is larger than 16384 bytes, ignored") >= 0);
	assert_int_equal(p_count, 7);
	assert_true(find_out("cmdline (fw_cfg): (empty)") >= 0);

	hk_log_reset();
	bi->files[BOOT_FILE_CFG].state = BOOT_FILE_ERROR;
	bi->files[BOOT_FILE_CFG].status = 0x800000000000000eULL;
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("warning: vireo.cfg: reading EFI/vireo/vireo.cfg failed (EFI status 0x800000000000000e), ignored") >= 0);
	assert_int_equal(p_count, 7);

	hk_log_reset();
	bi->files[BOOT_FILE_CFG].state = BOOT_FILE_ABSENT;
	assert_int_equal(config_boot(bi), 1);
	assert_true(find_out("config: no EFI/vireo/vireo.cfg") >= 0);

	hk_log_reset();
	bi->files[BOOT_FILE_CFG].state = BOOT_FILE_NONE;	/* PVH: not looked for, nothing said */
	assert_int_equal(config_boot(bi), 1);
	assert_true(find_out("vireo.cfg") < 0);
	assert_int_equal(p_count, 7);
	free(bi);
}

/* A length past the cap (a boot/ bug) is clamped to it, not trusted: the
 * whole 16 KiB buffer is one line (the NULs behind the text), too long, and
 * ASan sees no read past the buffer. */
static void test_boot_len_clamped(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_OK, "t.count=11", "");

	bi->files[BOOT_FILE_CFG].len = 0xffffffffu;
	config_boot(bi);
	assert_true(find_out("warning: vireo.cfg line 1: longer than 1023 characters, ignored") >= 0);
	assert_int_equal(p_count, 7);
	free(bi);
}

/* ---- every source at once: the order, what each said, what was ignored ---- */

static char seed_user[BOOT_SEED_USER_MAX], seed_meta[BOOT_SEED_META_MAX];

static void set_seed(struct boot_info *bi, u32 kind, const char *user, const char *meta)
{
	struct boot_seed *sd = &bi->seed;

	sd->kind = kind;
	sd->fs = BOOT_SEED_ISO9660;
	sd->found = 1;
	sd->devices = 3;
	snprintf(sd->label, sizeof sd->label, "%s", kind == BOOT_SEED_NOCLOUD ? "cidata" : "config-2");
	sd->user.state = user ? BOOT_FILE_OK : BOOT_FILE_ABSENT;
	snprintf(sd->user.path, sizeof sd->user.path, "%s", kind == BOOT_SEED_NOCLOUD ? "user-data" : "openstack/latest/user_data");
	if (user) {
		memset(seed_user, 0, sizeof seed_user);
		memcpy(seed_user, user, strlen(user));
		sd->user.base = (u64)(uintptr_t)seed_user;
		sd->user.len = strlen(user);
		sd->user.cap = BOOT_SEED_USER_MAX;
	}
	sd->meta.state = meta ? BOOT_FILE_OK : BOOT_FILE_ABSENT;
	if (meta) {
		memcpy(seed_meta, meta, strlen(meta));
		sd->meta.base = (u64)(uintptr_t)seed_meta;
		sd->meta.len = strlen(meta);
	}
}

/* defaults < vireo.cfg < the boot loader < the seed < SMBIOS < fw_cfg */
static void test_boot_sources_precedence(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_OK, "t.count=2\nt.mask=0x2\nt.mode=slow\nt.name=cfg\nt.even=2\n",
				      "t.mask=0x3 t.mode=fast t.name=ldr t.even=6");
	int at[6];

	snprintf(bi->cmdline_src, sizeof bi->cmdline_src, "loadoptions");
	set_seed(bi, BOOT_SEED_NOCLOUD, "# vireo keys\nt.mode=auto\nt.name=seed\nt.even=8\n",
		 "instance-id: iid-local01\nlocal-hostname: v1\n");
	bi->smbios.state = BOOT_SMBIOS_OK;
	bi->smbios.strings = bi->smbios.used = 1;
	snprintf(bi->smbios.cmdline, sizeof bi->smbios.cmdline, "t.name=smb t.even=10");
	snprintf(bi->fwcfg_cmdline, sizeof bi->fwcfg_cmdline, "t.even=12");
	bi->fwcfg_len = (s32)strlen(bi->fwcfg_cmdline);
	assert_int_equal(config_boot(bi), 1);	/* t.dup only */
	assert_int_equal(p_count, 2);
	assert_int_equal(p_mask, 3);
	assert_int_equal(p_mode, 2);
	assert_string_equal(p_name, "smb");
	assert_int_equal(p_even, 12);
	at[0] = find_out("config: EFI/vireo/vireo.cfg: ");
	at[1] = find_out("cmdline (loadoptions): t.mask=0x3 t.mode=fast t.name=ldr t.even=6");
	at[2] = find_out("seed: cidata (NoCloud) on ISO 9660 \"cidata\": user data 46 bytes, meta data 44 bytes "
			 "(instance iid-local01)");
	at[3] = find_out("smbios: io.systemd.credential:vireo.cmdline (1): t.name=smb t.even=10");
	at[4] = find_out("cmdline (fw_cfg): t.even=12");
	at[5] = find_out("config: sources in order, later wins key by key: vireo.cfg, cmdline (loadoptions), "
			 "seed (cidata), smbios, cmdline (fw_cfg)");
	for (int i = 0; i < 6; i++)
		assert_true(at[i] >= 0 && (i == 0 || at[i] > at[i - 1]));
	assert_true(find_out("config: t.count=2 (from vireo.cfg)") > at[5]);
	assert_true(find_out("config: t.mask=0x3 (from cmdline (loadoptions))") > at[5]);
	assert_true(find_out("config: t.mode=auto (from seed (cidata))") > at[5]);
	assert_true(find_out("config: t.name=smb (from smbios)") > at[5]);
	assert_true(find_out("config: t.even=12 (from cmdline (fw_cfg))") > at[5]);
	assert_true(find_out("cmdline (none)") < 0);
	free(bi);
}

static void test_boot_seed_what_is_ignored(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_ABSENT, NULL, "");

	snprintf(bi->cmdline_src, sizeof bi->cmdline_src, "none");
	/* cloud-init's own formats are named and not parsed */
	set_seed(bi, BOOT_SEED_CONFIG_DRIVE, "#cloud-config\nhostname: v1\n", "{\"uuid\": \"d8e0-2d56\", \"name\": \"v\"}");
	bi->seed.found = 3;
	bi->seed.fs = BOOT_SEED_FAT;
	bi->seed.flags = BOOT_SEED_HAS_NETWORK | BOOT_SEED_HAS_VENDOR;
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("seed: config-2 (OpenStack config drive) on FAT \"config-2\": user data 27 bytes, "
			     "meta data 34 bytes (instance d8e0-2d56)") >= 0);
	assert_true(find_out("seed: 2 more seed(s) ignored: one is read per boot") >= 0);
	assert_true(find_out("seed: openstack/latest/network_data.json ignored: vireo takes ip=, gw= and dns= from "
			     "the user data") >= 0);
	assert_true(find_out("seed: openstack/latest/vendor_data.json ignored: vireo reads the user data only") >= 0);
	assert_true(find_out("warning: seed: openstack/latest/user_data is #cloud-config, not vireo's key=value "
			     "lines: ignored") >= 0);
	assert_true(find_out("cmdline (none): (empty)") >= 0);
	assert_true(find_out("config: sources") < 0);
	for (const char *u = "#!/bin/sh\n"; u; u = u[1] == '!' ? "\x1f\x8b\x08" : NULL) {
		hk_log_reset();
		set_seed(bi, BOOT_SEED_NOCLOUD, u, NULL);
		assert_int_equal(config_boot(bi), 2);
		assert_true(find_out(u[1] == '!' ? "user-data is #!, not" : "user-data is gzip-compressed, not") >= 0);
		assert_true(find_out("meta data none, 0 bytes") >= 0);
	}
	/* refusals boot/ recorded */
	hk_log_reset();
	set_seed(bi, BOOT_SEED_NOCLOUD, NULL, NULL);
	bi->seed.user.state = BOOT_FILE_TOO_BIG;
	bi->seed.user.len = 20000;
	bi->seed.user.cap = BOOT_SEED_USER_MAX;
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("warning: seed: user-data is larger than 16384 bytes (20000), ignored") >= 0);
	hk_log_reset();
	bi->seed.user.state = BOOT_FILE_ERROR;
	bi->seed.user.status = (u64)(s64)-EBADMSG;
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("warning: seed: reading user-data failed (error 0xffffffffffffffb6), ignored") >= 0);
	/* no seed anywhere: one line, if anything was looked at */
	hk_log_reset();
	memset(&bi->seed, 0, sizeof bi->seed);
	bi->seed.devices = 2;
	assert_int_equal(config_boot(bi), 1);
	assert_true(find_out("seed: none (no cidata or config-2 volume on 2 block devices and file systems)") >= 0);
	hk_log_reset();
	bi->seed.devices = 0;	/* PVH */
	config_boot(bi);
	assert_true(find_out("seed:") < 0);
	free(bi);
}

/* The instance id is read from untrusted meta data: each case sits in a
 * buffer of exactly its length (ASan sees any read past it), and the id
 * is at most 63 printable bytes, or nothing. */
static void test_boot_seed_meta_data_edges(void **state)
{
	static const struct {
		u32 kind;
		const char *meta, *want;
	} cases[] = {
		{ BOOT_SEED_NOCLOUD, "instance-id", NULL },
		{ BOOT_SEED_NOCLOUD, "instance-id:", NULL },
		{ BOOT_SEED_NOCLOUD, "instance-id:   ", NULL },
		{ BOOT_SEED_NOCLOUD, "instance-id: x", "x" },
		{ BOOT_SEED_NOCLOUD, "instance-id: 'q'\n", "q" },
		{ BOOT_SEED_NOCLOUD, "my-instance-id: no\ninstance-id: yes\n", "yes" },
		{ BOOT_SEED_NOCLOUD, "instance-id = no\n", NULL },
		{ BOOT_SEED_NOCLOUD, "instance-id: a\x01b", "a" },
		{ BOOT_SEED_NOCLOUD, "instance-id: "
				     "0123456789012345678901234567890123456789012345678901234567890123456789",
		  "012345678901234567890123456789012345678901234567890123456789012" },
		{ BOOT_SEED_CONFIG_DRIVE, "{\"uuid\"", NULL },
		{ BOOT_SEED_CONFIG_DRIVE, "{\"uuid\":", NULL },
		{ BOOT_SEED_CONFIG_DRIVE, "{\"uuid\": \"", NULL },
		{ BOOT_SEED_CONFIG_DRIVE, "{\"uuid\":\"u-1\",\"name\":\"v\"}", "u-1" },
		{ BOOT_SEED_CONFIG_DRIVE, "{\"name\": \"uuid\", \"uuid\": \"u-2\"}", "u-2" },
	};
	struct boot_info *bi = new_bi(BOOT_FILE_ABSENT, NULL, "");
	char want[160];

	snprintf(bi->cmdline_src, sizeof bi->cmdline_src, "none");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t n = strlen(cases[i].meta);
		char *m = malloc(n);

		memcpy(m, cases[i].meta, n);
		hk_log_reset();
		set_seed(bi, cases[i].kind, "t.count=5\n", NULL);
		bi->seed.meta.state = BOOT_FILE_OK;
		bi->seed.meta.base = (u64)(uintptr_t)m;
		bi->seed.meta.len = n;
		config_boot(bi);
		snprintf(want, sizeof want, "meta data %zu bytes%s%s%s\n", n, cases[i].want ? " (instance " : "",
			 cases[i].want ? cases[i].want : "", cases[i].want ? ")" : "");
		assert_true(find_out(want) >= 0);
		assert_int_equal(p_count, 5);
		free(m);
	}
	free(bi);
}

static void test_boot_smbios_what_is_ignored(void **state)
{
	struct boot_info *bi = new_bi(BOOT_FILE_ABSENT, NULL, "");
	struct boot_smbios *sm = &bi->smbios;

	snprintf(bi->cmdline_src, sizeof bi->cmdline_src, "none");
	sm->state = BOOT_SMBIOS_DAMAGED;
	sm->strings = 7;
	sm->used = 1;
	sm->refused = 2;
	sm->other_vireo = 2;
	snprintf(sm->refused_why, sizeof sm->refused_why, "not Base64");
	snprintf(sm->other_name, sizeof sm->other_name, "vireo.hostname");
	snprintf(sm->cmdline, sizeof sm->cmdline, "t.count=3");
	assert_int_equal(config_boot(bi), 4);
	assert_int_equal(p_count, 3);
	assert_true(find_out("warning: smbios: the structure table is damaged after 7 OEM string(s)") >= 0);
	assert_true(find_out("warning: smbios: credential vireo.hostname and others ignored: vireo reads "
			     "vireo.cmdline only") >= 0);
	assert_true(find_out("warning: smbios: 2 vireo.cmdline credential(s) ignored: not Base64") >= 0);
	assert_true(find_out("smbios: 2 OEM string(s) ignored (not io.systemd.credential:vireo.cmdline)") >= 0);
	assert_true(find_out("config: t.count=3 (from smbios)") >= 0);
	/* fw_cfg longer than the kernel keeps: none of it (boot/ kept the
	 * first 1023 bytes, which could end in half a value) */
	hk_log_reset();
	memset(sm, 0, sizeof *sm);
	snprintf(bi->fwcfg_cmdline, sizeof bi->fwcfg_cmdline, "t.count=4");
	bi->fwcfg_len = 5000;
	p_count = 7;	/* as at boot: the default check sees defaults */
	assert_int_equal(config_boot(bi), 2);
	assert_true(find_out("warning: cmdline (fw_cfg): 5000 bytes, longer than the 1023 a command line holds: "
			     "ignored") >= 0);
	assert_true(find_out("cmdline (none)") < 0);
	assert_true(find_out("cmdline (fw_cfg): t.count") < 0);
	assert_int_equal(p_count, 7);
	/* exactly 1023: taken */
	hk_log_reset();
	bi->fwcfg_len = BOOT_CMDLINE_MAX - 1;
	assert_int_equal(config_boot(bi), 1);
	assert_int_equal(p_count, 4);
	free(bi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_table_is_the_linker_set, reset),
		cmocka_unit_test_setup(test_defaults_stay, reset),
		cmocka_unit_test_setup(test_every_type_parses, reset),
		cmocka_unit_test_setup(test_bad_values_keep_defaults, reset),
		cmocka_unit_test_setup(test_validator_rejects, reset),
		cmocka_unit_test_setup(test_duplicate_key_reported_first_wins, reset),
		cmocka_unit_test_setup(test_default_check, reset),
		cmocka_unit_test_setup(test_values_described, reset),
		cmocka_unit_test_setup(test_print_sorted, reset),
		cmocka_unit_test_setup(test_sources_in_order, reset),
		cmocka_unit_test_setup(test_file_bad_value_and_repeat, reset),
		cmocka_unit_test_setup(test_origin_text_cut, reset),
		cmocka_unit_test_setup(test_boot_file_then_cmdline, reset),
		cmocka_unit_test_setup(test_boot_file_states, reset),
		cmocka_unit_test_setup(test_boot_len_clamped, reset),
		cmocka_unit_test_setup(test_boot_sources_precedence, reset),
		cmocka_unit_test_setup(test_boot_seed_what_is_ignored, reset),
		cmocka_unit_test_setup(test_boot_seed_meta_data_edges, reset),
		cmocka_unit_test_setup(test_boot_smbios_what_is_ignored, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
