/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the files of the analyser share (not installed).
 */
#ifndef HS_SAFETY_INTERNAL_H
#define HS_SAFETY_INTERNAL_H

#include <stddef.h>

#include "core/safety/arena.h"
#include "core/safety/safety.h"
#include "core/safety/shell/shparse.h"

/* ---- policy (policy.c) ---- */

enum hs_pred_kind {
	HS_P_GLOB = 0,  /* glob:PATTERN on the word */
	HS_P_IGLOB,     /* iglob:PATTERN, case-insensitive */
	HS_P_PATH,      /* path:SET  the normalised path is an entry of SET */
	HS_P_UNDER,     /* under:SET the normalised path is an entry of SET or inside one */
	HS_P_HAS,       /* has:A|B   case-insensitive substring */
	HS_P_SQL,       /* sql:destructive */
	HS_P_MOUNT,     /* mount:PRED  a mount spec whose host source satisfies PRED */
	HS_P_VALUE,     /* value:KEY=PRED  a KEY=... word whose value satisfies PRED */
	HS_P_UNKNOWN,   /* unknown:SET a run-time value decides where the path is; its known part is in SET */
};

struct hs_pathset {
	const char *name;
	const char **pats;
	size_t n;
	size_t cap;
	/* Built once loading is done (hs_policy_index): per pattern, after a
	 * leading '!', the length of its literal prefix and whether it is all
	 * literal; a path that differs there cannot match, sparing fnmatch(). */
	size_t *litlen;
	unsigned char *literal;
};

struct hs_pred {
	int kind;
	const char *arg;               /* pattern, text or key */
	size_t arglen;
	const struct hs_pathset *set;  /* HS_P_PATH, HS_P_UNDER */
	struct hs_pred *inner;         /* HS_P_MOUNT, HS_P_VALUE */
	size_t litlen;                 /* HS_P_GLOB: length of the literal prefix of arg */
	int literal;                   /* HS_P_GLOB: arg has no glob or escape character */
};

struct hs_predlist {
	struct hs_pred *v;
	size_t n;
};

/* "r|R|recursive" or "pid=host": short letters, long names, optional value predicate. */
struct hs_flagspec {
	const char *names[8];
	size_t n;
	struct hs_pred *value;
};

struct hs_flaglist {
	struct hs_flagspec *v;
	size_t n;
};

struct hs_strlist {
	const char **v;
	size_t n;
	/*
	 * NULL when no entry is a glob; else per entry 1 when it is one (as a
	 * program name, see hs_strlist_glob()) and litlen[] its literal prefix.
	 */
	const unsigned char *glob;
	const size_t *litlen;
	/* Bit c set: an entry could match a name starting with byte c. */
	unsigned char first[32];
};

enum hs_writes { HS_WR_NONE = 0, HS_WR_ARGS, HS_WR_LAST, HS_WR_KV };

/* What an option of a program's grammar is (see "options" in hs-policy(5)). */
enum hs_optkind {
	HS_OK_UNKNOWN = 0, /* not in the grammar */
	HS_OK_FLAG,        /* no operand */
	HS_OK_ARG,         /* an operand, attached or the next word */
	HS_OK_OPTARG,      /* an operand only when attached (-m/path, --mount=path) */
	HS_OK_CODE,        /* the operand is shell code the program runs */
	HS_OK_SPLIT,       /* the operand is split into a command (env -S) */
	HS_OK_STOP,        /* nothing runs (sudo -l, command -v) */
	HS_OK_OPAQUE,      /* what runs cannot be known (pwsh -EncodedCommand) */
	HS_OK_ARGV,        /* the rest of the words is a command (watch -x) */
	HS_OK_INT,         /* an integer operand; anything else and the program refuses to run (nice -n) */
	HS_OK_CHDIR,       /* the operand is the directory the command runs in (env -C, sudo -D) */
};

/* hs_cmd.cwd of a command whose directory is known only at run time (cd "$X"). */
extern const char hs_cwd_unknown[];
int hs_cwd_is_unknown(const char *cwd);
/*
 * The directory DIR names when entered from cwd: a copy in x's arena, NULL
 * for the start directory or a directory below it (*depth counts the levels;
 * without depth, ".." from the start is unknown), or hs_cwd_unknown.
 */
struct hs_actx;
const char *hs_cwd_enter(struct hs_actx *x, const char *cwd, const char *dir, unsigned flags, int *depth);

struct hs_longopt {
	const char *name;
	size_t len;
	int kind;                      /* enum hs_optkind */
	const char *const *when;       /* HS_OK_CODE: "KEY=PREFIX" globs the operand must match; NULL: always */
};

/* How a wrapper runs what it runs (the "runs" key). */
enum hs_runs {
	HS_RUN_NONE = 0, HS_RUN_COMMAND, HS_RUN_SHELL, HS_RUN_EVAL, HS_RUN_SOURCE, HS_RUN_FIND, HS_RUN_XARGS,
	HS_RUN_WATCH, HS_RUN_SU, HS_RUN_SSH, HS_RUN_PARALLEL, HS_RUN_STDIN, HS_RUN_OPTIONS, HS_RUN_DASHDASH,
	HS_RUN_CODE_OPERAND,
};

/* How a program's argv reads: its option grammar, what it runs and what it writes. */
struct hs_progdecl {
	struct hs_strlist names;
	const struct hs_longopt *sopt[128]; /* short options by letter (name is the letter) */
	struct hs_longopt *longs;      /* long options */
	size_t nlong;
	int runs;                      /* enum hs_runs */
	int operands;                  /* HS_RUN_COMMAND: operands before the command */
	int assigns;                   /* words holding '=' before the command are assignments */
	int complete;                  /* "options" lists every option: unknown ones are errors */
	int single_dash;               /* long options start with one dash, any case (pwsh -Command) */
	int last_wins;                 /* of several code options only the last runs (su -c) */
	const char *operand_glob;      /* HS_RUN_COMMAND: the first operand must match, or nothing runs */
	const char *sub;               /* the wrapper only with this subcommand ("run" for uv run) */
	int writes;                    /* enum hs_writes */
	const char *writes_key;        /* HS_WR_KV: "of" for dd of=... */
	struct hs_flaglist write_opts; /* option values that are written files */
	struct hs_flaglist writes_if;  /* writes only when one of these flags is given */
};

struct hs_rule {
	const char *id;
	int hardline;
	int host_scope;
	const char *description;
	const char *file;
	struct hs_strlist programs;      /* names or globs; empty: any, including none */
	struct hs_strlist programs_not;
	struct hs_strlist subcommands;
	struct hs_flaglist flags_all, flags_any, flags_none;
	struct hs_predlist args_any, args_all, words_any, words_all, last_arg, sources_any,
		values_any, writes_any, reads_any, redirs_any, env_any, stdin_text_any;
	struct hs_strlist stdin_from, script_from;
	int min_args;
	struct hs_strlist examples, counterexamples;
	int any_program;                 /* no program restriction */
};

struct hs_policy {
	struct hs_arena mem;
	struct hs_rule *rules;
	size_t n_rules, cap_rules;
	struct hs_pathset *sets;
	size_t n_sets, cap_sets;
	struct hs_progdecl *decls;
	size_t n_decls, cap_decls;
	const char *home;
	size_t home_len;
	/* Index: rules by exact program name; rules with globs or no program. */
	struct hs_pidx *idx;
	size_t idx_cap;
	size_t *generic;
	size_t n_generic;
};

/* What the index knows of one program name (policy-index.c). */
struct hs_pidx {
	const char *name;
	size_t *rules;                    /* rules naming it exactly, in rule order */
	size_t n, cap;
	const struct hs_progdecl *decl;   /* its (last) declaration, or NULL */
	int has_sub;                      /* a declaration names "PROG SUB" (docker exec) */
};

/* One option read from argv by hs_opt_next(). */
struct hs_opt {
	const char *name;       /* the grammar's full name when known, else as written */
	size_t len;
	int is_long;
	int kind;               /* enum hs_optkind; HS_OK_UNKNOWN also when ambiguous */
	const char *value;      /* operand, or NULL */
	const struct hs_longopt *lo; /* the grammar entry, or NULL */
	const char *word;       /* the word it came from */
};

struct hs_optstate {
	int i;                  /* next word */
	const char *cl;         /* inside a cluster of short options, or NULL */
	int dashdash;           /* "--" was read */
	int unknown_last;       /* resolve.c: the last option read was unknown, with no operand attached */
};

/*
 * Read the next option of argv[st->i..argc) with d's grammar (d may be
 * NULL: every option is then unknown and takes no operand).  Returns 1 with
 * *o filled in; 0 when st->i is at an operand or the end, or after "--"
 * (st->dashdash set, st->i past it).  Long options may be abbreviated to
 * any unambiguous prefix, as getopt_long() allows.
 */
int hs_opt_next(const struct hs_progdecl *d, const char *const *argv, int argc, struct hs_optstate *st,
		struct hs_opt *o);
/* Is the operand of a code option shell code (its "when" conditions); the code, or NULL. */
const char *hs_opt_code(const struct hs_opt *o);

/* Build the matching tables once every file is read; -1 when out of memory. */
int hs_policy_index(struct hs_policy *p);
/* Free what hs_policy_index() allocated. */
void hs_policy_index_free(struct hs_policy *p);
/* The index entry of prog, or NULL when no rule or declaration names it. */
const struct hs_pidx *hs_policy_prog(const struct hs_policy *p, const char *prog);
const struct hs_progdecl *hs_policy_decl(const struct hs_policy *p, const char *prog);
/* Grow a malloc'ed array to hold n + 1 elements; NULL when out of memory. */
void *hs_grow(void *arr, size_t *cap, size_t n, size_t elem);
/* Length of the literal prefix of a glob pattern (up to *, ?, [ or \). */
size_t hs_glob_litlen(const char *pat);
/* Do s and pat agree on pat's first n bytes (n from hs_glob_litlen())? */
static inline int
hs_prefix_eq(const char *pat, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (pat[i] != s[i])
			return 0;
	return 1;
}
/* Fill l->glob, l->litlen (from arena a) and l->first; -1 when out of memory. */
int hs_strlist_glob(struct hs_arena *a, struct hs_strlist *l);

/* ---- analysis (analyse.c) ---- */

#define HS_PROGSET_MAX 16

struct hs_progset {
	const char *p[HS_PROGSET_MAX];
	int n;
};

void hs_progset_add(struct hs_progset *s, const char *prog);
void hs_progset_merge(struct hs_progset *s, const struct hs_progset *o);

/* A command that would run, after wrappers are seen through. */
struct hs_cmd {
	const char *prog;            /* basename of the program; "" when none */
	const char **argv;           /* argv[0] is the program word */
	const unsigned *aflags;      /* HS_W_* per argument */
	const struct hs_progset *const *aprod; /* per argument: what its substitutions ran, or NULL */
	int argc;
	const struct hs_sh_redir *redirs;
	const char **env;            /* NAME=VALUE assignments in effect */
	int nenv;
	struct hs_progset stdin_from;  /* programs whose output this command reads */
	struct hs_progset script_from; /* programs that produced the code it runs */
	const char *stdin_text;        /* static heredoc or here-string text */
	const char *cwd;               /* directory from an earlier cd (or a wrapper's -C): NULL for
	                                  the start directory, hs_cwd_unknown when known only at run time */
};

struct hs_alias {
	const char *name;
	const char *value;
	struct hs_alias *next;
};

struct hs_func {
	const char *name;
	const struct hs_sh_node *body;
	struct hs_func *next;
};

struct hs_actx {
	const struct hs_policy *pol;
	enum hs_context ctx;
	struct hs_analysis *out;
	struct hs_arena *a;
	int depth;
	int steps;                 /* work done; bounds hostile inputs */
	struct hs_alias *aliases;
	struct hs_func *funcs;
	const char *cwd;
	int cwd_depth;                 /* levels below the start directory, while cwd is NULL */
	const char *home;
};

#define HS_ANALYSE_MAX_DEPTH 24
#define HS_ANALYSE_MAX_STEPS 20000

void hs_actx_opaque(struct hs_actx *x, const char *reason);
/*
 * Turn out's findings and opacity into its verdict: an opaque input in
 * host context gets the "opaque" finding (shown as its argv_norm).
 */
void hs_analysis_finish(struct hs_analysis *out, enum hs_context ctx, const char *shown);
/* NAME=VALUE words whose value a shell runs or expands later (PROMPT_COMMAND, PS4, BASH_ENV...). */
void hs_analyse_env_code(struct hs_actx *x, const char *const *env, int n);
/* Parse text and analyse it; adds what ran to produced (may be NULL). */
void hs_analyse_script(struct hs_actx *x, const char *text, size_t len,
		       const struct hs_progset *stdin_from, struct hs_progset *produced);
/* Analyse one argv (already static words), as if run with cmd's context. */
void hs_analyse_argv(struct hs_actx *x, const char **argv, const unsigned *aflags, int argc,
		     const struct hs_cmd *ctxcmd, struct hs_progset *produced);
/* The same for a tail of an existing command (a wrapper's payload). */
void hs_analyse_tail(struct hs_actx *x, const struct hs_cmd *c, int from, struct hs_progset *produced);
const char *hs_basename(const char *s);
/* 1 when an (unquoted) word would be a glob pattern to bash: * or ?, or [ with a ] after it. */
int hs_is_glob(const char *s);

/* ---- wrappers and payloads (resolve.c, interp.c) ---- */

/*
 * If argv[0] names a wrapper, analyse what it runs and return 1 (the
 * wrapper itself is then also matched by rules as an ordinary command);
 * return 0 when argv[0] is not a wrapper.
 */
int hs_resolve_wrapper(struct hs_actx *x, struct hs_cmd *c, struct hs_progset *produced);
/*
 * Decode the backslash escape at s[0] (n bytes left) of a string literal:
 * \n, \t, ..., \xHH, \NNN, \uHHHH, \u{H}, \UHHHHHHHH.  Writes one byte to
 * *out ('?' for a character past ASCII) and returns the bytes consumed.
 */
size_t hs_unescape(const char *s, size_t n, char *out);
/* Scan interpreter code (lang "python", "perl", "ruby", "node", "php") for shell commands it runs. */
void hs_interp_scan(struct hs_actx *x, const char *lang, const char *code, const struct hs_cmd *c,
		    struct hs_progset *produced);

/* ---- matching (match.c, pred.c, sql.c) ---- */

void hs_match_cmd(struct hs_actx *x, const struct hs_cmd *c);
int hs_pred_match(const struct hs_policy *p, const struct hs_pred *pr, const char *word,
		  const char *cwd);
int hs_path_norm(const struct hs_policy *p, const char *in, const char *cwd, char *out, size_t outlen,
		 int *partial);
int hs_sql_destructive(const char *sql);
void hs_add_finding(struct hs_actx *x, const struct hs_rule *r, const struct hs_cmd *c);

#endif
