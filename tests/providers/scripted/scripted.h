/*
 * scripted.h - the scripted test providers: a cloud that records every
 * call and answers from a script (tests/unit/test_engine*.c;
 * docs/testing.md, "The scripted providers").
 *
 * Six provider tables share one world (tests/providers/scripted/
 * provider.cmake): `scripted` (nodes one by one, placement groups, with
 * list_zones, find_node, describe_nodes, nodes_running and
 * cleanup_cluster),
 * `scripted_batch` (the same and create_nodes, whose nodes take their rank
 * from the launch index), `scripted_basic` (only list_offers, create_node,
 * find_node, describe_node and delete_node; a node's IP is known once it is
 * described, not from its create), `scripted_named` (a rendezvous name
 * before launch), `scripted_group` (one group per cluster, as a Slurm job:
 * GPC_CAP_GROUP and GPC_CAP_QUEUE, whose shares_files answers per region)
 * and `scripted_rdzv` (workers numbered by the rendezvous).
 *
 * The world is the cloud, not a session's: it outlives gpc_session_close,
 * as a cloud outlives a gpuctl that was killed, so that a test can "crash"
 * by closing its session and apply again in a new one.  It is one per
 * process and not thread-safe.
 *
 * By default it is a cloud that works: list_offers gives one offer
 * (instance type t1 in region r1, on-demand at 1.00 USD/h, 8 vCPUs,
 * 32 GiB, no GPU); list_zones gives one zone, the region's name and "a";
 * create makes node "s-N" with private IP "10.0.0.N" (N = 1, 2, ... in
 * the order of creation, over the whole world); shares_files says yes
 * (1) for every region; a node is booting for
 * boot_s seconds of the engine's clock (gpc_now) after its create,
 * running for run_s more, then its job ends with exit status 0
 * (succeeded; failed for another exit status) and the machine powers off
 * (stopped); find_node finds a node by its client token (a node of a
 * create_nodes call by "<token>/<index>"); a create with a token the
 * world already has gives that node again; delete_node of a node gone
 * succeeds; cleanup_cluster deletes the cluster's nodes left.
 *
 * Every call is one line of the call log:
 *   OP KEY=VALUE ... -> RESULT
 * The keys, in this order, where the call has them:
 *   list_offers                    -> the number of offers
 *   list_zones region type         -> the zones, comma-separated
 *   create_node name rank region zone type token attempt head
 *                                  -> the node's id
 *   create_nodes n first rank region zone type token attempt head
 *                                  -> the nodes' ids, comma-separated
 *   find_node region token         -> the node's id and phase ("s-1 booting")
 *   describe_node region id        -> the phase
 *   describe_nodes cluster ids     -> the phases, comma-separated
 *   shares_files region zone       -> 1 or 0
 *   nodes_running cluster ids      -> ok
 *   delete_node region id          -> ok
 *   cleanup_cluster cluster regions-> ok, and the nodes it deleted
 * head is the head's address the payload carries ("-" when it has none:
 * the head finds its own); rank is the node rank the payload carries, with
 * "+index" when the node adds its launch index to it.  A phase is
 * gpc_phase_name's; an ended job's phase has its exit status:
 * "succeeded(0)", "failed(3)".  A call that fails answers "-> ERR CODE"
 * with the gpc_code name ("-> ERR capacity"); a call that acted but whose
 * answer was lost answers "-> s-1, ERR provider (answer lost)".
 */
#ifndef GPUCTL_TEST_SCRIPTED_H
#define GPUCTL_TEST_SCRIPTED_H

#include <stdint.h>

#include "gpuctl/error.h"

/* Empty the world, the call log and the script; boot_s 5, run_s 60; the
 * default offer and zones.  Call it first in each test. */
void scripted_reset(void);

/* The call log (one line per call, each ended by '\n'); "" when empty.
 * Valid until the next call of any scripted function or provider. */
const char *scripted_calls(void);

/* Forget the call log so far (the world and the script stay). */
void scripted_calls_clear(void);

/* Seconds a new node boots before its job runs (0: running at once), and
 * seconds the job runs before it ends. */
void scripted_timing(long boot_s, long run_s);

/* list_offers gives this offer too (the first call of it replaces the
 * default offer): instance type `type` in `region`, on-demand at
 * `price` USD per node-hour. */
void scripted_offer(const char *type, const char *region, double price);

/* The same, with the offer's own zone `zone` (as a Slurm partition: the
 * zone the node is created in when the table lists no zones). */
void scripted_offer_zone(const char *type, const char *region, const char *zone,
                         double price);

/* list_zones of `region` gives these zones, space-separated
 * ("r1a r1b r1c"; "" = the type is offered in no zone). */
void scripted_zones(const char *region, const char *zones);

/* The job of every node named `name` ("job-0") created from now on ends
 * with exit status `code` after running `run_s` seconds (-1: run_s of
 * scripted_timing). */
void scripted_exit(const char *name, int code, long run_s);

/* From now on (on: 1) a node whose job ended stays up, as a machine kept
 * up by lifecycle.idle_timeout does: describe says running (not stopped,
 * no exit status), and only the log transport (read_log, provider
 * "scripted" alone) gives the job's exit status, with an empty log.
 * read_log calls are not in the call log. */
void scripted_keep_up(int on);

/* Node `id` ("s-2") is gone from the provider without a delete (as a
 * machine someone removed by hand): describe says terminated. */
void scripted_gone(const char *id);

/* Node `id` ("s-2", made now or later) is taken back by the provider (a
 * spot interruption) at `at` (Unix seconds, the fixed clock's): from then
 * on describe says preempted, stopped, no exit status.  A node made in its
 * place has another id and is not taken back. */
void scripted_preempt_at(const char *id, int64_t at);

/* Node `id` (made now or later) is gone without a delete at `at`, as with
 * scripted_gone from then on. */
void scripted_gone_at(const char *id, int64_t at);

/* A spot offer (gpc_offer.spot = 1) of `type` in `region` at `price`
 * USD/hour, beside the on-demand ones of scripted_offer. */
void scripted_offer_spot(const char *type, const char *region, double price);

/* The offer added last gets fabric `fabric` ("efa"; the default is
 * "none").  `scripted` has placement groups (GPC_CAP_PLACEMENT): a
 * cluster of several nodes on an offer with a fabric keeps its zone. */
void scripted_offer_fabric(const char *fabric);

/* Node `id` gets an interruption notice: poll_interruptions says
 * `action` ("terminate") with `deadline` (Unix seconds) from now on. */
void scripted_notice(const char *id, const char *action, int64_t deadline);

/* From now on describe says `detail` of node `id` ("s-2") in
 * gpc_node_status.detail, whatever its phase ("" = nothing), as a
 * scheduler says why a job waits ("pending (Resources)"); a node deleted
 * or gone says "deleted" or "gone" instead. */
void scripted_detail(const char *id, const char *detail);

/* list_orphans says node `id` ("s-2") expires at `at` (Unix seconds; 0 =
 * no expiry).  It lists every node neither deleted nor gone, of the
 * regions asked (all when none), with its cluster's name, its name as
 * detail and {"node":"ID"} as data; cleanup_cluster's call line shows
 * the data it is given. */
void scripted_expires(const char *id, int64_t at);

/* shares_files (scripted_group's) answers `shares` (1: the nodes see this
 * machine's files; 0: they do not) for the offers of `region`. */
void scripted_shares_files(const char *region, int shares);

/* The directories the payload of the last create (create_node or
 * create_nodes) hands its node(s), as the bootstrap sets them:
 * "workdir=/abs/path checkpoint_dir=/ckpt", "-" for one it leaves empty;
 * "none" before any create.  Valid until the next call of any scripted
 * function or provider. */
const char *scripted_dirs(void);

/*
 * Script a failure.  Calls of operation `op` whose line holds every
 * KEY=VALUE of `where` (space-separated; NULL or "" = any call) are
 * counted from now on; the nth of them (1 = the first; 0 = each) fails
 * with `code`, doing nothing.  Rules are tried in the order they were
 * added; the first that fires answers.
 *   scripted_fail("create_node", "zone=r1a", 1, GPC_ERR_CAPACITY);
 *   scripted_fail("find_node", NULL, 1, GPC_ERR_PROVIDER);  (lookup error)
 */
void scripted_fail(const char *op, const char *where, int nth, gpc_code code);

/* The same, but the call does what it was asked (a create makes its node,
 * a delete deletes), and then its answer is lost: it fails with
 * GPC_ERR_PROVIDER as a connection reset would. */
void scripted_lose(const char *op, const char *where, int nth);

#endif /* GPUCTL_TEST_SCRIPTED_H */
