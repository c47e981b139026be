/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control.h — chirpd's control socket: a Unix stream socket that answers
 * one-line text requests with one-line JSON replies.
 *
 * PROTOCOL (doc/control.md has the full text)
 *   Request:  COMMAND [ARGS]\n     at most CONTROL_REQ_MAX bytes including
 *             the '\n'; a trailing '\r' is ignored; printable ASCII only.
 *   Reply:    one JSON object and '\n':
 *               {"ok":true,"proto":1, ...handler's fields...}
 *               {"ok":false,"proto":1,"error":"reason", ...}
 *   A client may send several requests on one connection; they are
 *   answered in order. The server never blocks on a client: a client that
 *   sends more than CONTROL_REQ_MAX bytes without '\n' gets an error reply
 *   and is closed; one that stays silent half-way through a request (or
 *   idle) for the idle timeout (5 s) is closed; one that does not read its
 *   replies (output buffer full) is dropped; over CONTROL_MAX_CLIENTS at
 *   once, a new client gets {"ok":false,"error":"too many clients"} and is
 *   closed.
 *
 * AUTHORITY
 *   The peer's credentials (SO_PEERCRED, SO_PEERGROUPS) decide: every
 *   command whose table entry has mutating = 0 is open to anyone who can
 *   connect (the socket file is mode 0660, group = control group); mutating
 *   commands need uid 0, the daemon's effective uid, or membership (primary
 *   or supplementary) in the configured control group.
 *
 * BUILT-IN COMMANDS
 *   help     lists the table's commands (name, args, mutating, help).
 *   ping     {"ok":true,"proto":1,"pong":true} unless the table has "ping".
 *
 * THREADING
 *   A struct control is used by one thread (the daemon's event loop);
 *   handlers run on that thread, inside control_dispatch().
 */
#ifndef CHIRP_CONTROL_H
#define CHIRP_CONTROL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#define CONTROL_PROTO        1      /* "proto" field of every reply        */
#define CONTROL_REQ_MAX      4096   /* bytes of one request line incl. '\n' */
#define CONTROL_MAX_CLIENTS  256    /* concurrent connections              */
#define CONTROL_IDLE_MS      5000   /* idle / half-sent client timeout     */
#define CONTROL_EVICT_MS     1000   /* full table: a newcomer evicts the client
				       idle longest, if idle this long  */
#define CONTROL_ERR_MAX      256    /* size of the handler's err buffer    */

struct control;                     /* opaque */

/* Who sent a request (from SO_PEERCRED). */
struct control_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	int may_mutate;                 /* 1 if mutating commands are allowed */
};

/*
 * A command handler. args is the rest of the line after the command word
 * and its separating blanks ("" if none; never NULL), already checked to be
 * printable ASCII without '\n'. On success fill reply (a JSON object; the
 * module adds "ok":true and "proto") and return 0. On failure return a
 * negative errno and write a sentence to err (errlen = CONTROL_ERR_MAX); the
 * reply is then {"ok":false,"proto":1,"error":err} plus any fields the
 * handler put into reply (e.g. "errors":[...] for a failed reload). If err
 * is left empty the module uses strerror(-ret).
 */
typedef int (*control_fn)(void *ctx, const char *args,
			  const struct control_peer *peer, json_t *reply,
			  char *err, size_t errlen);

/*
 * One command. The table passed to control_create ends with an entry whose
 * name is NULL; it must stay valid until control_destroy (use a static
 * const array).
 *   usage:    NULL = the command takes no arguments (the module rejects any
 *             with "'NAME' takes no arguments"); otherwise a short usage
 *             text for help, e.g. "LEVEL", and the handler checks args.
 *   mutating: 1 = only peers with may_mutate (module refuses others with
 *             "permission denied: 'NAME' needs root, uid U or group G").
 * Use designated initializers:
 *   { .name = "log-level", .usage = "LEVEL", .mutating = 1, .fn = cmd_log,
 *     .help = "set the log level (error|warning|notice|info|debug)" },
 */
struct control_cmd {
	const char *name;
	int mutating;
	control_fn fn;
	const char *help;
	const char *usage;
};

/*
 * Listen on path (parent directory created 0755 if missing). A stale socket
 * file is replaced only if nothing accepts on it; if a server answers, fails
 * with "another chirpd is running on PATH". The socket file gets mode
 * (0660 recommended) and, if group is not "", that group (which also grants
 * mutating commands). Returns NULL with the reason in err.
 */
struct control *control_create(const char *path, mode_t mode, const char *group,
			       const struct control_cmd *cmds, void *ctx,
			       char *err, size_t errlen);

/*
 * One pollable fd (an internal epoll fd) for the daemon's event loop: poll
 * it for EPOLLIN and call control_dispatch when readable. The module also
 * keeps a timerfd in that set so idle clients are closed even when nothing
 * else happens.
 */
int control_fd(const struct control *c);

/*
 * Accept new clients, read, answer complete requests, write pending
 * replies, close idle or misbehaving clients. Never blocks. Returns the
 * number of requests answered, or a negative errno on a failure of the
 * listening socket itself (client errors are handled and counted).
 */
int control_dispatch(struct control *c);

/* Close every client and the socket, unlink the socket file. NULL is fine. */
void control_destroy(struct control *c);

/* Counters for status/metrics. */
struct control_stats {
	unsigned clients;               /* connected now                      */
	uint64_t accepted;              /* connections accepted               */
	uint64_t requests;              /* requests answered (ok or not)      */
	uint64_t errors;                /* replies with "ok":false            */
	uint64_t refused;               /* over CONTROL_MAX_CLIENTS, none idle */
	uint64_t dropped;               /* closed: oversized, timeout, slow reader,
					   evicted for a newcomer             */
};
void control_get_stats(const struct control *c, struct control_stats *st);

/* Socket path in use. */
const char *control_path(const struct control *c);

/*
 * Test hooks (tests run as root, where everyone may mutate):
 *   control_set_owner_uid: the uid treated as the daemon's (default
 *     geteuid()); with root_is_owner = 0, uid 0 is no longer special.
 *   control_set_group_gid: the gid that grants mutation ((gid_t)-1 = none).
 *   control_set_idle_ms: idle / half-sent timeout (default CONTROL_IDLE_MS).
 *   control_set_evict_ms: how long a client must have been idle before a
 *     newcomer at the cap may evict it (default CONTROL_EVICT_MS).
 */
void control_set_owner_uid(struct control *c, uid_t uid, int root_is_owner);
void control_set_group_gid(struct control *c, gid_t gid);
void control_set_idle_ms(struct control *c, unsigned ms);
void control_set_evict_ms(struct control *c, unsigned ms);

#endif /* CHIRP_CONTROL_H */
