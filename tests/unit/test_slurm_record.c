/*
 * test_slurm_record.c - the slurm provider's record of a Slurm cluster
 * (providers/slurm/record.c): what sinfo and scontrol print, read into a
 * record; the record kept as JSON and read back; the offers made from it
 * for a spec, and why a partition makes none.
 *
 * The command output below was printed by Slurm 22.05.8 (Debian's
 * slurm-wlm) on a loopback Slurm cluster of six nodes: n1 with GPUs bound
 * to cores (so sinfo shows "(S:0-1)"), n2 with shards, n3 with untyped
 * GPUs and drained, n4 with GPUs of two types, n5 without GRES, n6 never
 * started (unknown*); partitions gpu (MaxNodes=4, MaxTime=1-12), one
 * (MaxTime=90), cpu (INFINITE), off (State=DOWN, MaxTime=2-00:30:15, which
 * Slurm shows rounded to the minute).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuctl/spec.h"
#include "gpuctl/util.h"
#include "slurm/slurm_internal.h"

static const char sinfo_2205[] =
    "one|n1|2|4000|gpu:a100:2(S:0-1)|idle\n"
    "gpu|n1|2|4000|gpu:a100:2(S:0-1)|idle\n"
    "gpu|n2|2|4000|gpu:a100:2,shard:a100:8|idle\n"
    "gpu|n3|4|16000|gpu:4|drained\n"
    "gpu|n4|4|16000|gpu:a100:2,gpu:v100:1|idle\n"
    "off|n5|4|15360|(null)|idle\n"
    "cpu|n5|4|15360|(null)|idle\n"
    "gpu|n6|2|4000|gpu:a100:2|unknown*\n";

static const char parts_2205[] =
    "PartitionName=gpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=YES QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=4 MaxTime=1-12:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
    "Nodes=n[1-4,6] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO "
    "OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=14 TotalNodes=5 "
    "SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=14,mem=44000M,node=5,billing=14\n"
    "PartitionName=one AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=01:30:00 MinNodes=0 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=n1 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=2 "
    "TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=2,mem=4000M,node=1,billing=2\n"
    "PartitionName=cpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=n5 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=4 "
    "TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=4,mem=15G,node=1,billing=4\n"
    "PartitionName=off AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=2-00:31:00 MinNodes=0 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=n5 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=DOWN TotalCPUs=4 "
    "TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=4,mem=15G,node=1,billing=4\n";

/* The tests' loopback Slurm (tests/e2e): two nodes of 1000 MiB, partition
 * gpu of both and `one` of node1. */
static const char sinfo_e2e[] =
    "gpu|node1|2|1000|gpu:a100:2|idle\n"
    "one|node1|2|1000|gpu:a100:2|idle\n"
    "gpu|node2|2|1000|gpu:a100:2|idle\n";
static const char parts_e2e[] =
    "PartitionName=gpu AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=YES QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=02:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
    "Nodes=node[1-2] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO "
    "OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=4 TotalNodes=2 "
    "SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=4,mem=2000M,node=2,billing=4\n"
    "PartitionName=one AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=NO QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=02:00:00 MinNodes=0 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=node1 PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=NO OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=2 "
    "TotalNodes=1 SelectTypeParameters=NONE JobDefaults=(null) DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED TRES=cpu=2,mem=1000M,node=1,billing=2\n";

static const char version_2205[] = "slurm-wlm 22.05.8\n";

/* A partition line with only the words the record reads. */
#define PART(name, def, maxtime, maxnodes, total, state)                                  \
    "PartitionName=" name " Default=" def " MaxTime=" maxtime " MaxNodes=" maxnodes       \
    " TotalNodes=" total " State=" state "\n"

static void check_node(const slurm_node_rec *nd, const char *part, const char *name,
                       uint32_t cpus, uint64_t mem, const char *type, uint32_t gpus,
                       const char *state)
{
    assert_string_equal(nd->partition, part);
    assert_string_equal(nd->name, name);
    assert_int_equal(nd->cpus, cpus);
    assert_int_equal(nd->mem_mib, mem);
    assert_string_equal(nd->gpu_type, type);
    assert_int_equal(nd->gpus, gpus);
    assert_string_equal(nd->state, state);
}

static void check_part(const slurm_part_rec *p, const char *name, int def, long max_time,
                       uint32_t max_nodes, uint32_t total, const char *state)
{
    assert_string_equal(p->name, name);
    assert_int_equal(p->is_default, def);
    assert_int_equal(p->max_time_min, max_time);
    assert_int_equal(p->max_nodes, max_nodes);
    assert_int_equal(p->total_nodes, total);
    assert_string_equal(p->state, state);
}

/* ---- parse --------------------------------------------------------------- */

static void test_parse_2205(void **state)
{
    (void)state;
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse(sinfo_2205, parts_2205, version_2205, &r, &err), 0);
    assert_string_equal(r.version, "slurm-wlm 22.05.8");
    assert_string_equal(r.site, "");
    assert_int_equal(r.checked_at, 0);
    assert_int_equal(r.n_nodes, 8);
    check_node(&r.nodes[0], "one", "n1", 2, 4000, "a100", 2, "idle");
    check_node(&r.nodes[1], "gpu", "n1", 2, 4000, "a100", 2, "idle");
    check_node(&r.nodes[2], "gpu", "n2", 2, 4000, "a100", 2, "idle");
    check_node(&r.nodes[3], "gpu", "n3", 4, 16000, "", 4, "drained");
    check_node(&r.nodes[4], "gpu", "n4", 4, 16000, "a100", 2, "idle"); /* first type */
    check_node(&r.nodes[5], "off", "n5", 4, 15360, "", 0, "idle");
    check_node(&r.nodes[6], "cpu", "n5", 4, 15360, "", 0, "idle");
    check_node(&r.nodes[7], "gpu", "n6", 2, 4000, "a100", 2, "unknown*");
    assert_int_equal(r.n_parts, 4);
    check_part(&r.parts[0], "gpu", 1, 2160, 4, 5, "UP");
    check_part(&r.parts[1], "one", 0, 90, 0, 1, "UP");
    check_part(&r.parts[2], "cpu", 0, -1, 0, 1, "UP");
    check_part(&r.parts[3], "off", 0, 2911, 0, 1, "DOWN");
    slurm_record_free(&r);
    assert_null(r.nodes);
    assert_null(r.parts);
    slurm_record_free(&r); /* twice is fine */

    /* nothing at all: an empty record */
    assert_int_equal(slurm_record_parse("", "", "", &r, &err), 0);
    assert_int_equal(r.n_nodes, 0);
    assert_int_equal(r.n_parts, 0);
    assert_string_equal(r.version, "");
    slurm_record_free(&r);
}

/* The GPUs of one sinfo line's GRES. */
static void gres_is(const char *gres, const char *type, uint32_t gpus)
{
    char line[256];
    snprintf(line, sizeof(line), "gpu|n1|8|64000|%s|idle\n", gres);
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    if (slurm_record_parse(line, "", "", &r, &err) != 0)
        fail_msg("%s: %s", gres, err.msg);
    assert_int_equal(r.n_nodes, 1);
    assert_string_equal(r.nodes[0].gpu_type, type);
    assert_int_equal(r.nodes[0].gpus, gpus);
    slurm_record_free(&r);
}

static void gres_bad(const char *gres)
{
    char line[256];
    snprintf(line, sizeof(line), "gpu|n1|8|64000|%s|idle", gres);
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse(line, "", "", &r, &err), GPC_ERR_PROVIDER);
    char want[512];
    snprintf(want, sizeof(want),
             "slurm: line 1 of sinfo is not PARTITION|NODE|CPUS|MEMORY|GRES|STATE as "
             "sinfo -h -a -N -o '%%R|%%N|%%c|%%m|%%G|%%T' prints it: '%s'", line);
    assert_string_equal(err.msg, want);
    assert_null(r.nodes);
}

static void test_gres_forms(void **state)
{
    (void)state;
    gres_is("gpu:a100:2", "a100", 2);
    gres_is("gpu:a100:2(S:0-1)", "a100", 2);
    gres_is("gpu:a100:2(S:0,2)", "a100", 2); /* a ',' inside the parentheses */
    gres_is("gpu:4", "", 4);
    gres_is("gpu:4(S:0)", "", 4);
    gres_is("gpu", "", 1);
    gres_is("gpu:a100:2,shard:8", "a100", 2);
    gres_is("gpu:a100:2,shard:a100:8", "a100", 2);
    gres_is("shard:8,gpu:h100:8", "h100", 8);
    gres_is("(null)", "", 0);
    gres_is("mps:100", "", 0);
    gres_is("gpu:a100:2,gpu:v100:1", "a100", 2);              /* the first type */
    gres_is("gpu:v100:1,gpu:a100:2", "v100", 1);
    gres_is("gpu:a100:1(S:0),gpu:a100:1(S:1)", "a100", 2);    /* one type twice */
    gres_is("gpu:tesla:no_consume:2", "tesla", 2);
    gres_is("gpu:nvidia_a100-sxm4-80gb:8", "nvidia_a100-sxm4-80gb", 8);
    gres_bad("gpu:a100:");
    gres_bad("gpu::2");
    gres_bad("gpu:a100:x");
    gres_bad("gpu:a:b:c:2");
    gres_bad("gpu:a100:2(S:0");
    gres_bad("gpu:a100_is_a_name_longer_than_31_bytes:2");
    gres_bad("");
    gres_bad("gpu:99999999999");
}

static void max_time_is(const char *t, long min)
{
    char parts[256];
    snprintf(parts, sizeof(parts), "PartitionName=p Default=NO MaxTime=%s MaxNodes=UNLIMITED "
             "TotalNodes=1 State=UP", t);
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    if (slurm_record_parse("", parts, "", &r, &err) != 0)
        fail_msg("%s: %s", t, err.msg);
    assert_int_equal(r.n_parts, 1);
    if (r.parts[0].max_time_min != min)
        fail_msg("MaxTime=%s: %ld minutes, not %ld", t, r.parts[0].max_time_min, min);
    slurm_record_free(&r);
}

static void max_time_bad(const char *t)
{
    char parts[256];
    snprintf(parts, sizeof(parts), "PartitionName=p Default=NO MaxTime=%s MaxNodes=UNLIMITED "
             "TotalNodes=1 State=UP", t);
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("", parts, "", &r, &err), GPC_ERR_PROVIDER);
    char want[512];
    snprintf(want, sizeof(want),
             "slurm: line 1 of scontrol show partition -o lacks one of PartitionName, "
             "Default=YES|NO, MaxTime, MaxNodes, TotalNodes, State, or has one of another "
             "form: '%s'", parts);
    assert_string_equal(err.msg, want);
}

static void test_max_time_forms(void **state)
{
    (void)state;
    max_time_is("UNLIMITED", -1);
    max_time_is("INFINITE", -1);
    max_time_is("30", 30);             /* MM */
    max_time_is("0", 0);
    max_time_is("30:00", 30);          /* MM:SS */
    max_time_is("30:01", 31);          /* seconds round up */
    max_time_is("02:00:00", 120);      /* HH:MM:SS */
    max_time_is("01:30:01", 91);
    max_time_is("1-12", 2160);         /* D-HH */
    max_time_is("1-12:30", 2190);      /* D-HH:MM */
    max_time_is("2-00:30:15", 2911);   /* D-HH:MM:SS */
    max_time_is("365-00:00:00", 525600);
    max_time_bad("1:2:3:4");
    max_time_bad("abc");
    max_time_bad("1-");
    max_time_bad("-1");
    max_time_bad("1:");
    max_time_bad("");
}

static void test_parse_errors(void **state)
{
    (void)state;
    slurm_record r;
    gpc_error err;

    /* five fields, on the second line */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("gpu|n1|2|4000|(null)|idle\ngpu|n2|2|4000|idle\n", "",
                                        "", &r, &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: line 2 of sinfo is not PARTITION|NODE|CPUS|MEMORY|GRES|"
                        "STATE as sinfo -h -a -N -o '%R|%N|%c|%m|%G|%T' prints it: "
                        "'gpu|n2|2|4000|idle'");
    assert_null(r.nodes);
    assert_int_equal(r.n_nodes, 0);

    /* CPUs not a number; memory with sinfo's '+' of a grouped line */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("gpu|n1|N/A|4000|(null)|idle", "", "", &r, &err),
                     GPC_ERR_PROVIDER);
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("gpu|n1|2|4000+|(null)|idle", "", "", &r, &err),
                     GPC_ERR_PROVIDER);
    /* seven fields */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("gpu|n1|2|4000|(null)|idle|x", "", "", &r, &err),
                     GPC_ERR_PROVIDER);
    /* an empty state */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("gpu|n1|2|4000|(null)|", "", "", &r, &err),
                     GPC_ERR_PROVIDER);

    /* a partition without State */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse(sinfo_e2e, "PartitionName=gpu Default=YES MaxTime=60 "
                                        "MaxNodes=2 TotalNodes=2\n", "", &r, &err),
                     GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: line 1 of scontrol show partition -o lacks one of "
                        "PartitionName, Default=YES|NO, MaxTime, MaxNodes, TotalNodes, State, or "
                        "has one of another form: 'PartitionName=gpu Default=YES MaxTime=60 "
                        "MaxNodes=2 TotalNodes=2'");
    assert_null(r.nodes);
    assert_null(r.parts);
    /* Default neither YES nor NO; MaxNodes not a number */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("", PART("p", "MAYBE", "60", "2", "2", "UP"), "", &r,
                                        &err), GPC_ERR_PROVIDER);
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("", PART("p", "NO", "60", "some", "2", "UP"), "", &r,
                                        &err), GPC_ERR_PROVIDER);
    /* a word that only begins like a key is not that key */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("", "PartitionName=p Default=NO MaxTimeX=60 "
                                        "MaxNodes=2 TotalNodes=2 State=UP", "", &r, &err),
                     GPC_ERR_PROVIDER);

    /* a version line too long for the record */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse("", "", "slurm 22.05.8 with a name far too long\n", &r,
                                        &err), GPC_ERR_PROVIDER);
    assert_string_equal(err.msg, "slurm: sinfo -V printed 'slurm 22.05.8 with a name far too "
                        "long', not a version");
}

/* ---- save and load -------------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    slurm_site sites[2];
    char parts[2][64];
    slurm_ctx ctx;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/gpuctl-slurmrec-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->sites[0].name, sizeof(f->sites[0].name), "lab");
    f->sites[0].local = 1;
    f->sites[0].gpu_hour_price = 1.5;
    snprintf(f->sites[0].from, sizeof(f->sites[0].from), "/home/u/.config/gpuctl/config:3");
    snprintf(f->sites[1].name, sizeof(f->sites[1].name), "lab2");
    snprintf(f->sites[1].login, sizeof(f->sites[1].login), "me@login2");
    snprintf(f->sites[1].from, sizeof(f->sites[1].from), "/home/u/.config/gpuctl/config:9");
    f->ctx.sites = f->sites;
    f->ctx.n_sites = 2;
    snprintf(f->ctx.state_dir, sizeof(f->ctx.state_dir), "%s", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gpc_rm_rf(f->dir, NULL);
    free(f);
    return 0;
}

/* Parse and save a record for site `site`. */
static void keep(fixture *f, const char *site, const char *sinfo, const char *parts)
{
    slurm_record r;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse(sinfo, parts, version_2205, &r, &err), 0);
    snprintf(r.site, sizeof(r.site), "%s", site);
    r.checked_at = 1767225600;
    if (slurm_record_save(&f->ctx, &r, &err) != 0)
        fail_msg("%s", err.msg);
    slurm_record_free(&r);
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_save_load(void **state)
{
    fixture *f = *state;
    slurm_record r, back;
    gpc_error err;
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_parse(sinfo_2205, parts_2205, version_2205, &r, &err), 0);
    snprintf(r.site, sizeof(r.site), "lab");
    r.checked_at = 1767225600;
    assert_int_equal(slurm_record_save(&f->ctx, &r, &err), 0);

    char path[128];
    struct stat st;
    snprintf(path, sizeof(path), "%s/slurm", f->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(path, sizeof(path), "%s/slurm/lab.json", f->dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    assert_int_equal(slurm_record_load(&f->ctx, "lab", &back, &err), 0);
    assert_string_equal(back.site, "lab");
    assert_int_equal(back.checked_at, 1767225600);
    assert_string_equal(back.version, "slurm-wlm 22.05.8");
    assert_int_equal(back.n_parts, r.n_parts);
    assert_int_equal(back.n_nodes, r.n_nodes);
    for (size_t i = 0; i < r.n_parts; i++)
        check_part(&back.parts[i], r.parts[i].name, r.parts[i].is_default,
                   r.parts[i].max_time_min, r.parts[i].max_nodes, r.parts[i].total_nodes,
                   r.parts[i].state);
    for (size_t i = 0; i < r.n_nodes; i++)
        check_node(&back.nodes[i], r.nodes[i].partition, r.nodes[i].name, r.nodes[i].cpus,
                   r.nodes[i].mem_mib, r.nodes[i].gpu_type, r.nodes[i].gpus,
                   r.nodes[i].state);
    slurm_record_free(&back);

    /* the file itself: a few members, exactly */
    char *text = NULL;
    assert_int_equal(gpc_read_file(path, 1 << 20, &text, NULL, &err), 0);
    assert_non_null(strstr(text, "\"schema_version\":\t1,"));
    assert_non_null(strstr(text, "\"max_time_min\":\t-1,"));
    assert_non_null(strstr(text, "\"name\":\t\"n6\",\n\t\t\t\"partition\":\t\"gpu\",\n\t\t\t"
                                 "\"cpus\":\t2,\n\t\t\t\"mem_mib\":\t4000,\n\t\t\t"
                                 "\"gpu_type\":\t\"a100\",\n\t\t\t\"gpus\":\t2,\n\t\t\t"
                                 "\"state\":\t\"unknown*\""));
    free(text);

    /* saved again: replaced */
    r.checked_at = 1767229200;
    r.n_nodes = 1;
    assert_int_equal(slurm_record_save(&f->ctx, &r, &err), 0);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &back, &err), 0);
    assert_int_equal(back.checked_at, 1767229200);
    assert_int_equal(back.n_nodes, 1);
    slurm_record_free(&back);
    slurm_record_free(&r);
}

static void test_load_refuses(void **state)
{
    fixture *f = *state;
    slurm_record r;
    gpc_error err;
    char path[128], want[512];

    /* none yet */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_NOT_FOUND);
    assert_string_equal(err.msg, "slurm: Slurm cluster 'lab' has not been checked yet: run "
                        "gpuctl check slurm");
    assert_null(r.nodes);

    keep(f, "lab", sinfo_e2e, parts_e2e);
    snprintf(path, sizeof(path), "%s/slurm/lab.json", f->dir);

    /* a newer schema */
    write_text(path, "{\"schema_version\": 2, \"site\": \"lab\"}");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s has schema_version 2, written by a newer gpuctl "
             "(this one reads 1): upgrade gpuctl", path);
    assert_string_equal(err.msg, want);

    /* not JSON */
    write_text(path, "{\"schema_version\": 1,");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s is not JSON: run gpuctl check slurm to write it "
             "again", path);
    assert_string_equal(err.msg, want);

    /* no schema_version */
    write_text(path, "{\"site\": \"lab\"}");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s has no schema_version: run gpuctl check slurm to "
             "write it again", path);
    assert_string_equal(err.msg, want);

    /* a member of the wrong type */
    write_text(path, "{\"schema_version\": 1, \"site\": \"lab\", \"checked_at\": 1, "
               "\"version\": \"v\", \"partitions\": [], \"nodes\": [{\"name\": \"n\", "
               "\"partition\": \"p\", \"gpu_type\": \"\", \"state\": \"idle\", \"cpus\": \"2\", "
               "\"mem_mib\": 1, \"gpus\": 0}]}");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s is not a record of Slurm cluster 'lab' "
             "(nodes[].cpus is missing or wrong): run gpuctl check slurm to write it again",
             path);
    assert_string_equal(err.msg, want);
    assert_null(r.nodes);

    /* another site's record under this name */
    write_text(path, "{\"schema_version\": 1, \"site\": \"lab2\", \"checked_at\": 1, "
               "\"version\": \"v\", \"partitions\": [], \"nodes\": []}");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s is not a record of Slurm cluster 'lab' (site "
             "(another Slurm cluster's) is missing or wrong): run gpuctl check slurm to write "
             "it again", path);
    assert_string_equal(err.msg, want);

    /* the smallest good one */
    write_text(path, "{\"schema_version\": 1, \"site\": \"lab\", \"checked_at\": 1, "
               "\"version\": \"v\", \"partitions\": [], \"nodes\": []}");
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), 0);
    assert_int_equal(r.n_nodes, 0);
    slurm_record_free(&r);

    /* a name that is not a file name */
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "..", &r, &err), GPC_ERR_IO);
    assert_string_equal(err.msg, "slurm: '..' cannot name a Slurm cluster's record");

    /* no state directory */
    f->ctx.state_dir[0] = '\0';
    gpc_error_clear(&err);
    assert_int_equal(slurm_record_load(&f->ctx, "lab", &r, &err), GPC_ERR_IO);
    assert_string_equal(err.msg, "slurm: no state directory to keep the record of Slurm "
                        "cluster 'lab' in");
}

/* ---- offers -------------------------------------------------------------- */

static gpc_spec *spec_of(const char *yaml)
{
    gpc_spec *s = NULL;
    gpc_error err;
    gpc_error_clear(&err);
    if (gpc_spec_load_string("job.yaml", "/tmp", yaml, strlen(yaml), &s, &err) != 0)
        fail_msg("%s", err.msg);
    return s;
}

#define SPEC(extra) "name: job\nrun:\n  command: python3 train.py\n" extra

/* list_offers for `yaml`: the offers, or the error in err. */
static int offers_for(fixture *f, const char *yaml, gpc_offer **o, size_t *n, gpc_error *err)
{
    gpc_spec *s = spec_of(yaml);
    gpc_error_clear(err);
    int rc = slurm_list_offers(&f->ctx, s, o, n, err);
    gpc_spec_free(s);
    return rc;
}

static void check_offer(const gpc_offer *o, const char *type, const char *region,
                        const char *zone, const char *model, uint32_t gpus, double vcpus,
                        double mem_gib, double price)
{
    assert_string_equal(o->provider, "slurm");
    assert_string_equal(o->instance_type, type);
    assert_string_equal(o->region, region);
    assert_string_equal(o->zone, zone);
    assert_string_equal(o->gpu_model, model);
    assert_int_equal(o->gpu_count, gpus);
    assert_true(o->gpu_mem_gib == 0);
    assert_true(o->vcpus == vcpus);
    assert_true(o->mem_gib == mem_gib);
    assert_int_equal(o->spot, 0);
    assert_true(o->price_hourly == price);
    assert_string_equal(o->fabric, "");
}

static void test_offers(void **state)
{
    fixture *f = *state;
    keep(f, "lab", sinfo_2205, parts_2205);
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;

    /* one node: every partition that is UP, each shape of its usable nodes
     * (n3 drained and n6 not responding make none), cheapest first; lab2
     * has no record, which only an error would say */
    assert_int_equal(offers_for(f, SPEC(""), &o, &n, &err), 0);
    assert_int_equal(n, 4);
    check_offer(&o[0], "4cpu-15gib", "lab", "cpu", "", 0, 4, 15.0, 0);
    check_offer(&o[1], "2xa100-2cpu-3gib", "lab", "gpu", "A100", 2, 2, 4000 / 1024.0, 3.0);
    check_offer(&o[2], "2xa100-4cpu-15gib", "lab", "gpu", "A100", 2, 4, 16000 / 1024.0, 3.0);
    check_offer(&o[3], "2xa100-2cpu-3gib", "lab", "one", "A100", 2, 2, 4000 / 1024.0, 3.0);
    free(o);

    /* two nodes: n1, n2 and n4 (larger) can each be a 2xa100-2cpu-3gib */
    assert_int_equal(offers_for(f, SPEC("nodes: 2\n"), &o, &n, &err), 0);
    assert_int_equal(n, 1);
    check_offer(&o[0], "2xa100-2cpu-3gib", "lab", "gpu", "A100", 2, 2, 4000 / 1024.0, 3.0);
    free(o);
    assert_int_equal(offers_for(f, SPEC("nodes: 4\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_null(o);
    assert_int_equal(n, 0);
    assert_string_equal(err.msg,
        "slurm: partition 'gpu' of Slurm cluster 'lab' has 3 usable nodes of shape "
        "2xa100-2cpu-3gib; the spec asks for 4 nodes (not usable when gpuctl check slurm "
        "looked: n3 drained, n6 unknown*; run it again once they are back); partition 'gpu' of "
        "Slurm cluster 'lab' has 1 usable node of shape 2xa100-4cpu-15gib; the spec asks for 4 "
        "nodes (not usable when gpuctl check slurm looked: n3 drained, n6 unknown*; run it "
        "again once they are back); partition "
        "'one' of Slurm cluster 'lab' has 1 usable node of shape 2xa100-2cpu-3gib; the spec "
        "asks for 4 nodes; partition 'cpu' of Slurm cluster 'lab' has 1 usable node of shape "
        "4cpu-15gib; the spec asks for 4 nodes; partition 'off' of Slurm cluster 'lab' is "
        "DOWN, not UP; Slurm cluster 'lab2' has not been checked yet: run gpuctl check slurm");

    /* MaxNodes */
    assert_int_equal(offers_for(f, SPEC("nodes: 5\nzone: gpu\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg,
        "slurm: partition 'gpu' of Slurm cluster 'lab' allows at most 4 nodes per job "
        "(MaxNodes); the spec asks for 5; Slurm cluster 'lab2' has not been checked yet: run "
        "gpuctl check slurm");

    /* MaxTime against lifecycle.max_duration */
    assert_int_equal(offers_for(f, SPEC("zone: one\nlifecycle:\n  max_duration: 1h30m\n"), &o,
                                &n, &err), 0);
    assert_int_equal(n, 1);
    check_offer(&o[0], "2xa100-2cpu-3gib", "lab", "one", "A100", 2, 2, 4000 / 1024.0, 3.0);
    free(o);
    assert_int_equal(offers_for(f, SPEC("regions: [lab]\nzone: one\nlifecycle:\n"
                                        "  max_duration: 1h30m1s\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg,
        "slurm: partition 'one' of Slurm cluster 'lab' limits a job to 01:30:00 (MaxTime); "
        "lifecycle.max_duration asks for 01:30:01");
    assert_int_equal(offers_for(f, SPEC("region: lab\nzones: [gpu, cpu]\nlifecycle:\n"
                                        "  max_duration: 2d\n"), &o, &n, &err), 0);
    assert_int_equal(n, 1); /* cpu has no limit */
    check_offer(&o[0], "4cpu-15gib", "lab", "cpu", "", 0, 4, 15.0, 0);
    free(o);
    assert_int_equal(offers_for(f, SPEC("region: lab\nzone: gpu\nlifecycle:\n"
                                        "  max_duration: 2d\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg,
        "slurm: partition 'gpu' of Slurm cluster 'lab' limits a job to 1-12:00:00 (MaxTime); "
        "lifecycle.max_duration asks for 2-00:00:00");

    /* regions and zones that name nothing configured */
    assert_int_equal(offers_for(f, SPEC("regions: [nope, nada]\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: regions: no Slurm cluster named 'nope', 'nada' is "
                        "configured (configured: lab, lab2)");
    assert_int_equal(offers_for(f, SPEC("region: lab\nzones: [nope, nada]\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: zones: Slurm cluster 'lab' has no partition named "
                        "'nope', 'nada'");
    assert_int_equal(offers_for(f, SPEC("region: lab2\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: Slurm cluster 'lab2' has not been checked yet: run "
                        "gpuctl check slurm");

    /* a partition with no usable node */
    keep(f, "lab2", "gpu|g1|8|64000|gpu:h100:8|drained\n"
                    "gpu|g2|8|64000|gpu:h100:8|down*\n",
         PART("gpu", "YES", "UNLIMITED", "UNLIMITED", "2", "UP"));
    assert_int_equal(offers_for(f, SPEC("region: lab2\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: partition 'gpu' of Slurm cluster 'lab2' has no usable "
                        "node (g1 drained, g2 down*)");
    /* a partition of no node */
    keep(f, "lab2", "", PART("empty", "YES", "UNLIMITED", "UNLIMITED", "0", "UP"));
    assert_int_equal(offers_for(f, SPEC("region: lab2\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: partition 'empty' of Slurm cluster 'lab2' has no node");
}

/* The example the tests use: the e2e Slurm's partition `one`. */
static void test_offers_e2e_too_many_nodes(void **state)
{
    fixture *f = *state;
    keep(f, "lab", sinfo_e2e, parts_e2e);
    f->ctx.n_sites = 1;
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;
    assert_int_equal(offers_for(f, SPEC("nodes: 2\nzone: one\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: partition 'one' of Slurm cluster 'lab' has 1 usable "
                        "node of shape 2xa100-2cpu-0gib; the spec asks for 2 nodes");
    assert_int_equal(offers_for(f, SPEC("nodes: 3\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: partition 'gpu' of Slurm cluster 'lab' has 2 usable "
                        "nodes of shape 2xa100-2cpu-0gib; the spec asks for 3 nodes; partition "
                        "'one' of Slurm cluster 'lab' has 1 usable node of shape "
                        "2xa100-2cpu-0gib; the spec asks for 3 nodes");
    assert_int_equal(offers_for(f, SPEC("nodes: 2\n"), &o, &n, &err), 0);
    assert_int_equal(n, 1);
    check_offer(&o[0], "2xa100-2cpu-0gib", "lab", "gpu", "A100", 2, 2, 1000 / 1024.0, 3.0);
    free(o);
}

/* The site's `partitions`: only those, in that order, and one it names
 * that the record lacks is said. */
static void test_offers_site_partitions(void **state)
{
    fixture *f = *state;
    keep(f, "lab", sinfo_2205, parts_2205);
    f->ctx.n_sites = 1;
    memcpy(f->parts[0], "one", 4);
    memcpy(f->parts[1], "nosuch", 7);
    f->sites[0].partitions = f->parts;
    f->sites[0].n_partitions = 2;
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;
    assert_int_equal(offers_for(f, SPEC(""), &o, &n, &err), 0);
    assert_int_equal(n, 1);
    check_offer(&o[0], "2xa100-2cpu-3gib", "lab", "one", "A100", 2, 2, 4000 / 1024.0, 3.0);
    free(o);
    assert_int_equal(offers_for(f, SPEC("nodes: 2\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg,
        "slurm: partition 'one' of Slurm cluster 'lab' has 1 usable node of shape "
        "2xa100-2cpu-3gib; the spec asks for 2 nodes; Slurm cluster 'lab' has no partition "
        "'nosuch' (partitions in /home/u/.config/gpuctl/config:3; run gpuctl check slurm if "
        "it was added since)");
    /* zones narrow the site's partitions */
    assert_int_equal(offers_for(f, SPEC("zone: gpu\n"), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: zones: Slurm cluster 'lab' has no partition named "
                        "'gpu' among the partitions of /home/u/.config/gpuctl/config:3");
    f->sites[0].partitions = NULL;
    f->sites[0].n_partitions = 0;
}

/* Which node states count as usable, shapes whose memory differs by less
 * than a GiB, untyped GPUs, and the GPU model of an nvml-detected type. */
static void test_offers_states_shapes(void **state)
{
    fixture *f = *state;
    f->ctx.n_sites = 1;
    keep(f, "lab",
         "p|a1|8|64000|gpu:h100:8|idle\n"
         "p|a2|8|64000|gpu:h100:8|mixed\n"
         "p|a3|8|64000|gpu:h100:8|allocated\n"
         "p|a4|8|64000|gpu:h100:8|completing\n"
         "p|a5|8|64000|gpu:h100:8|idle~\n"
         "p|a6|8|64000|gpu:h100:8|maint\n"
         "p|a7|8|64000|gpu:h100:8|reserved\n"
         "p|a8|8|64000|gpu:h100:8|planned\n"
         "p|a9|8|64000|gpu:h100:8|allocated+\n"
         "p|b1|8|64000|gpu:h100:8|idle*\n"
         "p|b2|8|64000|gpu:h100:8|down*\n"
         "p|b3|8|64000|gpu:h100:8|drained\n"
         "p|b4|8|64000|gpu:h100:8|draining\n"
         "p|b5|8|64000|gpu:h100:8|fail\n"
         "p|b6|8|64000|gpu:h100:8|failing\n"
         "p|b7|8|64000|gpu:h100:8|inval\n"
         "p|b8|8|64000|gpu:h100:8|mixed+drain\n"
         "p|b9|8|64000|gpu:h100:8|future\n"
         "p|b10|8|64000|gpu:h100:8|down\n"
         "q|m1|16|511950|gpu:nvidia_a100-sxm4-80gb:8|idle\n"
         "q|m2|16|511900|gpu:nvidia_a100-sxm4-80gb:8|idle\n"
         "q|u1|4|8192|gpu:2|idle\n",
         PART("p", "YES", "UNLIMITED", "UNLIMITED", "19", "UP")
         PART("q", "NO", "UNLIMITED", "UNLIMITED", "3", "UP"));
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;
    assert_int_equal(offers_for(f, SPEC("nodes: 99\nzone: p\n"), &o, &n, &err),
                     GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: partition 'p' of Slurm cluster 'lab' has 9 usable "
                        "nodes of shape 8xh100-8cpu-62gib; the spec asks for 99 nodes (not "
                        "usable when gpuctl check slurm looked: b1 idle*, b2 down*, b3 drained, "
                        "b4 draining, ...; run it again once they are back)");

    assert_int_equal(offers_for(f, SPEC("nodes: 2\nzone: q\n"), &o, &n, &err), 0);
    assert_int_equal(n, 1);
    /* m1 and m2 are one shape (499 GiB), of the lesser memory */
    assert_string_equal(o[0].instance_type, "8xnvidia_a100-sxm4-80gb-16cpu-499gib");
    assert_string_equal(o[0].gpu_model, "A100-SXM4-80GB");
    assert_true(o[0].gpu_mem_gib == 80);
    assert_true(o[0].mem_gib == 511900 / 1024.0);
    assert_true(o[0].price_hourly == 12.0);
    free(o);
    assert_int_equal(offers_for(f, SPEC("zone: q\n"), &o, &n, &err), 0);
    assert_int_equal(n, 2);
    check_offer(&o[0], "2xgpu-4cpu-8gib", "lab", "q", "", 2, 4, 8.0, 3.0);
    assert_string_equal(o[1].instance_type, "8xnvidia_a100-sxm4-80gb-16cpu-499gib");
    free(o);
}

static void test_offers_no_site(void **state)
{
    fixture *f = *state;
    f->ctx.n_sites = 0;
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;
    assert_int_equal(offers_for(f, SPEC(""), &o, &n, &err), GPC_ERR_CAPACITY);
    assert_string_equal(err.msg, "slurm: no Slurm cluster is configured: add a [slurm \"NAME\"] "
                        "section to gpuctl's config file (docs/providers/slurm.md)");
    assert_null(o);
}

/* A record that cannot be read is an error of its own, not a reason. */
static void test_offers_bad_record(void **state)
{
    fixture *f = *state;
    keep(f, "lab", sinfo_e2e, parts_e2e);
    char path[128], want[512];
    snprintf(path, sizeof(path), "%s/slurm/lab.json", f->dir);
    write_text(path, "[]");
    gpc_offer *o = NULL;
    size_t n = 0;
    gpc_error err;
    assert_int_equal(offers_for(f, SPEC(""), &o, &n, &err), GPC_ERR_IO);
    snprintf(want, sizeof(want), "slurm: %s has no schema_version: run gpuctl check slurm to "
             "write it again", path);
    assert_string_equal(err.msg, want);
    assert_null(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_2205),
        cmocka_unit_test(test_gres_forms),
        cmocka_unit_test(test_max_time_forms),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test_setup_teardown(test_save_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers_e2e_too_many_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers_site_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers_states_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers_no_site, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offers_bad_record, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
