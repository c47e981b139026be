/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control.c — the control socket server (see control.h for the protocol).
 *
 * Everything runs on the caller's thread inside control_dispatch(), which
 * never blocks: the listening socket and every client are non-blocking and
 * sit in one internal epoll set (control_fd()), together with a timerfd
 * that wakes us to close idle clients. Per call we handle at most one
 * epoll batch, and per client at most CLIENT_BURST reads, so one busy
 * client cannot monopolise the loop; level-triggered epoll brings us back.
 *
 * Untrusted input is checked in this order (chrony's order): length (a line
 * must end within CONTROL_REQ_MAX bytes), bytes (printable ASCII), command
 * word (in the table), authority (mutating needs may_mutate), arguments
 * (none unless the entry has usage; then the handler checks them).
 *
 * Memory: one struct client (about 4 KiB) per connection, allocated at
 * accept, capped at CONTROL_MAX_CLIENTS (at the cap a newcomer evicts the
 * client silent longest, if silent CONTROL_EVICT_MS; else it is refused).
 * Replies are serialised by jansson
 * (allocation is fine here: this is not the data path) and queued up to
 * OUT_MAX bytes; a client that lets more pile up is dropped.
 */
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "timeutil.h"

#define OUT_MAX        (1u << 20)  /* reply backlog per client (bytes)     */
#define CLIENT_BURST   4           /* socket reads per client per dispatch */
#define EVENTS_MAX     64
#define ACCEPT_BURST   64
#define MAX_GROUPS     256

/* epoll tags for the two fds that are not clients. */
static char tag_listen, tag_timer;

struct client {
	int fd;
	struct control_peer peer;
	gid_t groups[MAX_GROUPS];   /* supplementary groups (SO_PEERGROUPS)  */
	int ngroups;                /* -1: unknown                           */
	uint64_t last_ms;           /* last byte received or sent            */
	int closing;                /* close once out is flushed             */
	int eof;                    /* peer shut down its side               */
	int want_out;               /* EPOLLOUT registered                   */
	size_t inlen;
	char in[CONTROL_REQ_MAX + 1];
	char *out;
	size_t outlen, outoff, outcap;
};

struct control {
	int lfd, epfd, tfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t dev;
	ino_t ino;
	const struct control_cmd *cmds;
	void *ctx;
	uid_t owner_uid;
	int root_is_owner;
	gid_t group_gid;
	char group[64];
	unsigned idle_ms;
	unsigned evict_ms;
	int timer_armed;
	int listen_paused;          /* out of fds: lfd out of epoll until the next tick */
	struct client *clients[CONTROL_MAX_CLIENTS];
	unsigned nclients;
	struct control_stats st;
};

/* CLOCK_MONOTONIC in ms: client idle times. */
static uint64_t now_ms(void)
{
	return mono_ns() / 1000000u;
}

/* mkdir -p for the parent of path, mode 0755. */
static int make_parent(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(dir, 0755) == 0) {
				/* Not narrowed by the umask: group members must
				 * reach the socket inside. */
				if (chmod(dir, 0755) < 0)
					log_warn("control: chmod %s: %s", dir, strerror(errno));
			} else if (errno != EEXIST) {
				int e = errno;
				snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(e));
				return -e;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

/*
 * If path exists: a socket nobody accepts on is stale and removed; a live
 * one means another daemon; anything else is not ours to delete.
 */
static int clear_stale(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; not removing it", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc == 0 || errno == EAGAIN || errno == EINPROGRESS) {
		/* EAGAIN: a live listener with a full backlog. */
		close(fd);
		snprintf(err, errlen, "another chirpd is running on %s", path);
		return -EADDRINUSE;
	}
	close(fd);
	if (errno != ECONNREFUSED) {
		rc = -errno;
		snprintf(err, errlen, "cannot probe %s: %s", path, strerror(-rc));
		return rc;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(-rc));
		return rc;
	}
	log_info("control: removed stale socket %s", path);
	return 0;
}

static int ep_add(int epfd, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* A control with no sockets yet: defaults, the command table, the path. */
static struct control *control_alloc(const char *path, const struct control_cmd *cmds,
				     void *ctx)
{
	struct control *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->lfd = c->epfd = c->tfd = -1;
	c->cmds = cmds;
	c->ctx = ctx;
	c->owner_uid = geteuid();
	c->root_is_owner = 1;
	c->group_gid = (gid_t)-1;
	c->idle_ms = CONTROL_IDLE_MS;
	c->evict_ms = CONTROL_EVICT_MS;
	snprintf(c->path, sizeof(c->path), "%s", path);
	return c;
}

/* Resolve the socket's group name (none: no group). < 0 with err. */
static int control_resolve_group(struct control *c, const char *group, char *err, size_t errlen)
{
	struct group grp, *res = NULL;
	char buf[4096];
	int rc;

	if (!group || !group[0])
		return 0;
	rc = getgrnam_r(group, &grp, buf, sizeof(buf), &res);
	if (rc || !res) {
		snprintf(err, errlen, "control group '%s': %s", group,
			 rc ? strerror(rc) : "no such group");
		return -1;
	}
	c->group_gid = grp.gr_gid;
	snprintf(c->group, sizeof(c->group), "%s", group);
	return 0;
}

/* The listening socket, bound to path (not yet listening). < 0 with err. */
static int control_bind(struct control *c, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->lfd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "bind %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Give the bound socket its mode and group and remember its identity (so
 * that shutdown removes only our own socket). < 0 with err. */
static int control_secure(struct control *c, const char *path, mode_t mode, const char *group,
			  char *err, size_t errlen)
{
	struct stat st;

	/* Nobody can connect before listen(), so fixing mode and group here
	 * leaves no window with looser permissions. */
	if (chmod(path, mode) < 0) {
		snprintf(err, errlen, "chmod %s: %s", path, strerror(errno));
		return -1;
	}
	if (c->group_gid != (gid_t)-1 && chown(path, (uid_t)-1, c->group_gid) < 0) {
		snprintf(err, errlen, "chown %s to group %s: %s", path, group, strerror(errno));
		return -1;
	}
	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "stat %s: %s", path, strerror(errno));
		return -1;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	return 0;
}

/* Listen, and set up the epoll set over the listener and the idle timer.
 * < 0 with err. */
static int control_listen(struct control *c, const char *path, char *err, size_t errlen)
{
	if (listen(c->lfd, 128) < 0) {
		snprintf(err, errlen, "listen %s: %s", path, strerror(errno));
		return -1;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0) {
		snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
		return -1;
	}
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->tfd < 0) {
		snprintf(err, errlen, "timerfd_create: %s", strerror(errno));
		return -1;
	}
	if (ep_add(c->epfd, c->lfd, EPOLLIN, &tag_listen) < 0 ||
	    ep_add(c->epfd, c->tfd, EPOLLIN, &tag_timer) < 0) {
		snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

struct control *control_create(const char *path, mode_t mode, const char *group,
			       const struct control_cmd *cmds, void *ctx,
			       char *err, size_t errlen)
{
	struct sockaddr_un sa;
	struct control *c = NULL;

	if (!path || path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "control socket path '%s' must be absolute and shorter than %zu",
			 path ? path : "(null)", sizeof(sa.sun_path));
		return NULL;
	}
	if (!cmds) {
		snprintf(err, errlen, "no command table");
		return NULL;
	}
	c = control_alloc(path, cmds, ctx);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (control_resolve_group(c, group, err, errlen) < 0)
		goto fail;
	if (make_parent(path, err, errlen) < 0 || clear_stale(path, err, errlen) < 0)
		goto fail;
	if (control_bind(c, path, err, errlen) < 0)
		goto fail;
	if (control_secure(c, path, mode, group, err, errlen) < 0 ||
	    control_listen(c, path, err, errlen) < 0)
		goto fail_unlink;
	return c;

fail_unlink:
	unlink(path);
fail:
	if (c->tfd >= 0)
		close(c->tfd);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->lfd >= 0)
		close(c->lfd);
	free(c);
	return NULL;
}

int control_fd(const struct control *c)
{
	return c->epfd;
}

const char *control_path(const struct control *c)
{
	return c->path;
}

void control_get_stats(const struct control *c, struct control_stats *st)
{
	*st = c->st;
	st->clients = c->nclients;
}

void control_set_owner_uid(struct control *c, uid_t uid, int root_is_owner)
{
	c->owner_uid = uid;
	c->root_is_owner = root_is_owner;
	/* Clients already connected keep the decision made at accept. */
}

void control_set_group_gid(struct control *c, gid_t gid)
{
	c->group_gid = gid;
}

void control_set_idle_ms(struct control *c, unsigned ms)
{
	c->idle_ms = ms ? ms : 1;
	c->timer_armed = 0;     /* re-armed with the new period */
}

void control_set_evict_ms(struct control *c, unsigned ms)
{
	c->evict_ms = ms;
}

static void client_close(struct control *c, unsigned i);

/*
 * At the cap, make room for a newcomer: close the client that has been
 * silent longest, if it has been silent at least evict_ms. So connections
 * that sit idle (a script that never closes, half-sent requests) cannot
 * lock the operator's chirpctl out until the idle timeout; only clients
 * all active within the last evict_ms can. Returns 1 if one was closed.
 */
static int evict_idlest(struct control *c)
{
	uint64_t t = now_ms(), worst = 0;
	unsigned idx = 0;

	for (unsigned i = 0; i < c->nclients; i++) {
		uint64_t idle = t - c->clients[i]->last_ms;

		if (idle > worst) {
			worst = idle;
			idx = i;
		}
	}
	if (c->nclients == 0 || worst < c->evict_ms)
		return 0;
	log_info("control: %u clients connected; closing pid %d, silent for %llu ms, for a newcomer",
		 c->nclients, (int)c->clients[idx]->peer.pid, (unsigned long long)worst);
	c->st.dropped++;
	client_close(c, idx);
	return 1;
}

/* Periodic sweep while clients exist; off when there are none. */
static void arm_timer(struct control *c)
{
	int want = c->nclients > 0 || c->listen_paused;
	struct itimerspec its = { 0 };

	if (want == c->timer_armed)
		return;
	if (want) {
		unsigned period = c->idle_ms / 4;
		if (period < 20)
			period = 20;
		if (period > 1000)
			period = 1000;
		its.it_value.tv_sec = period / 1000;
		its.it_value.tv_nsec = (long)(period % 1000) * 1000000L;
		its.it_interval = its.it_value;
	}
	if (timerfd_settime(c->tfd, 0, &its, NULL) < 0) {
		log_warn("control: timerfd_settime: %s", strerror(errno));
		return;
	}
	c->timer_armed = want;
}

static void client_close(struct control *c, unsigned i)
{
	struct client *cl = c->clients[i];

	epoll_ctl(c->epfd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	free(cl->out);
	free(cl);
	c->nclients--;
	c->clients[i] = c->clients[c->nclients];
	c->clients[c->nclients] = NULL;
}

static int client_index(const struct control *c, const struct client *cl)
{
	for (unsigned i = 0; i < c->nclients; i++)
		if (c->clients[i] == cl)
			return (int)i;
	return -1;
}

/* Decide may_mutate from the peer's credentials. */
static void peer_auth(const struct control *c, struct client *cl)
{
	struct control_peer *p = &cl->peer;

	p->may_mutate = (p->uid == 0 && c->root_is_owner) || p->uid == c->owner_uid;
	if (!p->may_mutate && c->group_gid != (gid_t)-1) {
		if (p->gid == c->group_gid)
			p->may_mutate = 1;
		for (int i = 0; i < cl->ngroups && !p->may_mutate; i++)
			if (cl->groups[i] == c->group_gid)
				p->may_mutate = 1;
	}
}

/* Try to send the queued output. Returns 0, or -1 if the client is gone. */
static int client_flush(struct control *c, struct client *cl)
{
	while (cl->outoff < cl->outlen) {
		ssize_t n = send(cl->fd, cl->out + cl->outoff, cl->outlen - cl->outoff,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		cl->outoff += (size_t)n;
		cl->last_ms = now_ms();
	}
	if (cl->outoff == cl->outlen)
		cl->outoff = cl->outlen = 0;
	int want = cl->outlen > 0;
	if (want != cl->want_out) {
		struct epoll_event ev = {
			.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = cl,
		};
		if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, cl->fd, &ev) < 0)
			return -1;
		cl->want_out = want;
	}
	return 0;
}

/* Queue text (a reply line). Returns 0, or -1 if the client must be dropped. */
static int client_queue(struct control *c, struct client *cl, const char *s, size_t n)
{
	/* The cap is on backlog: one large reply (metrics) to a client that
	 * reads is fine; replies piling up behind it are not. */
	if (cl->outlen - cl->outoff > 0 && cl->outlen - cl->outoff + n > OUT_MAX) {
		log_debug("control: pid %d does not read its replies; dropping it", (int)cl->peer.pid);
		return -1;
	}
	if (cl->outoff) {
		memmove(cl->out, cl->out + cl->outoff, cl->outlen - cl->outoff);
		cl->outlen -= cl->outoff;
		cl->outoff = 0;
	}
	if (cl->outlen + n > cl->outcap) {
		size_t cap = cl->outcap ? cl->outcap : 1024;
		char *p;
		while (cap < cl->outlen + n)
			cap *= 2;
		p = realloc(cl->out, cap);
		if (!p)
			return -1;
		cl->out = p;
		cl->outcap = cap;
	}
	memcpy(cl->out + cl->outlen, s, n);
	cl->outlen += n;
	return client_flush(c, cl);
}

/* Serialise reply and queue it. */
static int send_reply(struct control *c, struct client *cl, json_t *reply)
{
	char *s = json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	if (!s) {
		static const char fallback[] =
			"{\"ok\":false,\"proto\":1,\"error\":\"internal error: reply could not be encoded\"}\n";
		c->st.errors++;
		return client_queue(c, cl, fallback, sizeof(fallback) - 1);
	}
	size_t n = strlen(s);
	char *line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return -1;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	rc = client_queue(c, cl, line, n + 1);
	free(line);
	return rc;
}

/* A reply carrying only an error. */
static int send_error(struct control *c, struct client *cl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int send_error(struct control *c, struct client *cl, const char *fmt, ...)
{
	char msg[CONTROL_ERR_MAX];
	va_list ap;
	json_t *r;
	int rc;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->st.requests++;
	c->st.errors++;
	r = json_pack("{s:b, s:i, s:s}", "ok", 0, "proto", CONTROL_PROTO, "error", msg);
	if (!r)
		return -1;
	rc = send_reply(c, cl, r);
	json_decref(r);
	return rc;
}

static const struct control_cmd *find_cmd(const struct control *c, const char *name)
{
	for (const struct control_cmd *k = c->cmds; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
}

static int builtin_help(const struct control *c, json_t *reply)
{
	json_t *arr = json_array();

	if (!arr)
		return -ENOMEM;
	json_array_append_new(arr, json_pack("{s:s, s:s, s:b, s:s}", "name", "help",
					     "usage", "", "mutating", 0,
					     "help", "list the commands"));
	if (!find_cmd(c, "ping"))
		json_array_append_new(arr, json_pack("{s:s, s:s, s:b, s:s}", "name", "ping",
						     "usage", "", "mutating", 0,
						     "help", "check that chirpd answers"));
	for (const struct control_cmd *k = c->cmds; k->name; k++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:b, s:s}", "name", k->name,
						     "usage", k->usage ? k->usage : "",
						     "mutating", k->mutating ? 1 : 0,
						     "help", k->help ? k->help : ""));
	return json_object_set_new(reply, "commands", arr) < 0 ? -ENOMEM : 0;
}

/*
 * Answer one request line (without '\n', NUL-terminated, len bytes).
 * Returns 0, or -1 if the client must be dropped now.
 */
static int handle_line(struct control *c, struct client *cl, char *line, size_t len)
{
	const struct control_cmd *k;
	char err[CONTROL_ERR_MAX], word[64];
	const char *args;
	size_t wl;
	json_t *reply;
	int rc;

	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];
		if ((ch < 0x20 && ch != '\t') || ch > 0x7e) {
			/* Binary: not a chirpctl; answer once and hang up. */
			cl->closing = 1;
			return send_error(c, cl, "malformed request: byte 0x%02x at offset %zu "
					  "(requests are one line of printable ASCII)", ch, i);
		}
	}
	while (*line == ' ' || *line == '\t')
		line++;
	wl = strcspn(line, " \t");
	if (wl == 0)
		return send_error(c, cl, "empty request (try 'help')");
	if (wl >= sizeof(word))
		return send_error(c, cl, "unknown command '%.32s...' (try 'help')", line);
	memcpy(word, line, wl);
	word[wl] = '\0';
	args = line + wl;
	while (*args == ' ' || *args == '\t')
		args++;
	/* Trailing blanks are not part of the arguments. */
	{
		char *e = (char *)args + strlen(args);
		while (e > args && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
	}

	k = find_cmd(c, word);
	if (!k && strcmp(word, "help") && strcmp(word, "ping"))
		return send_error(c, cl, "unknown command '%s' (try 'help')", word);
	if ((!k || !k->usage) && *args)
		return send_error(c, cl, "'%s' takes no arguments", word);
	if (k && k->mutating && !cl->peer.may_mutate) {
		if (c->group_gid != (gid_t)-1)
			return send_error(c, cl, "permission denied: '%s' needs root, uid %u or group %s",
					  word, (unsigned)c->owner_uid,
					  c->group[0] ? c->group : "(test group)");
		return send_error(c, cl, "permission denied: '%s' needs root or uid %u",
				  word, (unsigned)c->owner_uid);
	}

	reply = json_object();
	if (!reply || json_object_set_new(reply, "ok", json_true()) < 0 ||
	    json_object_set_new(reply, "proto", json_integer(CONTROL_PROTO)) < 0) {
		json_decref(reply);
		return send_error(c, cl, "out of memory");
	}
	err[0] = '\0';
	if (!k && !strcmp(word, "help"))
		rc = builtin_help(c, reply);
	else if (!k)
		rc = json_object_set_new(reply, "pong", json_true()) < 0 ? -ENOMEM : 0;
	else
		rc = k->fn(c->ctx, args, &cl->peer, reply, err, sizeof(err));
	c->st.requests++;
	if (rc < 0) {
		c->st.errors++;
		json_object_set_new(reply, "ok", json_false());
		json_object_set_new(reply, "proto", json_integer(CONTROL_PROTO));
		json_object_set_new(reply, "error", json_string(err[0] ? err : strerror(-rc)));
	} else {
		json_object_set_new(reply, "ok", json_true());
		json_object_set_new(reply, "proto", json_integer(CONTROL_PROTO));
	}
	rc = send_reply(c, cl, reply);
	json_decref(reply);
	return rc;
}

/*
 * Read what the client sent and answer complete lines. Returns 0, or -1
 * if the client is to be closed now.
 */
static int client_read(struct control *c, struct client *cl)
{
	int reads = 0;

	for (;;) {
		/* Answer every complete line already buffered (at most 4 KiB of
		 * them): lines left here would wait for the next byte from the
		 * client, as epoll only reports the socket. */
		while (!cl->closing) {
			char *nl = memchr(cl->in, '\n', cl->inlen);
			size_t ll;
			if (!nl)
				break;
			*nl = '\0';
			ll = (size_t)(nl - cl->in);
			if (handle_line(c, cl, cl->in, ll) < 0)
				return -1;
			cl->inlen -= ll + 1;
			memmove(cl->in, nl + 1, cl->inlen);
		}
		if (cl->closing)
			return 0;
		if (cl->inlen >= CONTROL_REQ_MAX) {
			cl->closing = 1;
			c->st.dropped++;
			return send_error(c, cl, "request longer than %d bytes", CONTROL_REQ_MAX - 1);
		}
		if (cl->eof) {
			/* A last line without '\n' before EOF is still a request. */
			if (cl->inlen) {
				cl->in[cl->inlen] = '\0';
				if (handle_line(c, cl, cl->in, cl->inlen) < 0)
					return -1;
				cl->inlen = 0;
			}
			cl->closing = 1;
			return 0;
		}
		/* Fairness: a few buffers per client per dispatch; unread data
		 * keeps the socket readable, so epoll brings us back. */
		if (reads++ >= CLIENT_BURST)
			return 0;
		ssize_t n = recv(cl->fd, cl->in + cl->inlen, CONTROL_REQ_MAX - cl->inlen,
				 MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (n == 0) {
			cl->eof = 1;
			continue;
		}
		cl->inlen += (size_t)n;
		cl->last_ms = now_ms();
	}
}

static void accept_clients(struct control *c)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct client *cl;
		struct ucred cred;
		socklen_t sl = sizeof(cred);
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* The pending connection stays queued and the listening
				 * socket stays readable: without this the event loop
				 * would spin. Stop listening until the next timer tick. */
				if (epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->lfd, NULL) == 0)
					c->listen_paused = 1;
				log_warn("control: accept: %s; not accepting for a moment",
					 strerror(errno));
			} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
				log_warn("control: accept: %s", strerror(errno));
			}
			return;
		}
		if (c->nclients >= CONTROL_MAX_CLIENTS && !evict_idlest(c)) {
			static const char busy[] =
				"{\"ok\":false,\"proto\":1,\"error\":\"too many clients\"}\n";
			ssize_t w = send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)w;
			close(fd);
			c->st.refused++;
			continue;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl) {
			close(fd);
			c->st.refused++;
			continue;
		}
		cl->fd = fd;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0) {
			log_warn("control: SO_PEERCRED: %s", strerror(errno));
			free(cl);
			close(fd);
			continue;
		}
		cl->peer.pid = cred.pid;
		cl->peer.uid = cred.uid;
		cl->peer.gid = cred.gid;
		cl->ngroups = -1;
#ifdef SO_PEERGROUPS
		{
			socklen_t gl = sizeof(cl->groups);
			if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, cl->groups, &gl) == 0)
				cl->ngroups = (int)(gl / sizeof(gid_t));
		}
#endif
		peer_auth(c, cl);
		cl->last_ms = now_ms();
		if (ep_add(c->epfd, fd, EPOLLIN, cl) < 0) {
			log_warn("control: epoll_ctl: %s", strerror(errno));
			free(cl);
			close(fd);
			continue;
		}
		c->clients[c->nclients++] = cl;
		c->st.accepted++;
	}
}

static void sweep_idle(struct control *c)
{
	uint64_t t = now_ms(), exp;
	ssize_t r = read(c->tfd, &exp, sizeof(exp));   /* drain the tick */

	(void)r;
	if (c->listen_paused && ep_add(c->epfd, c->lfd, EPOLLIN, &tag_listen) == 0)
		c->listen_paused = 0;
	for (unsigned i = 0; i < c->nclients; ) {
		struct client *cl = c->clients[i];
		if (t - cl->last_ms >= c->idle_ms) {
			log_debug("control: closing idle client pid %d", (int)cl->peer.pid);
			if (cl->inlen || cl->outlen)
				c->st.dropped++;
			client_close(c, i);
			continue;
		}
		i++;
	}
}

int control_dispatch(struct control *c)
{
	struct epoll_event ev[EVENTS_MAX];
	uint64_t before = c->st.requests;
	int n, timer = 0;

	n = epoll_wait(c->epfd, ev, EVENTS_MAX, 0);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		void *p = ev[i].data.ptr;
		struct client *cl;
		int idx;

		if (p == &tag_listen) {
			accept_clients(c);
			continue;
		}
		if (p == &tag_timer) {
			timer = 1;
			continue;
		}
		cl = p;
		idx = client_index(c, cl);
		if (idx < 0)
			continue;       /* closed earlier in this batch */
		if ((ev[i].events & EPOLLOUT) && client_flush(c, cl) < 0) {
			client_close(c, (unsigned)idx);
			continue;
		}
		if ((ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !cl->closing &&
		    client_read(c, cl) < 0) {
			client_close(c, (unsigned)idx);
			continue;
		}
		if ((ev[i].events & (EPOLLERR)) ||
		    (cl->closing && cl->outlen == 0) ||
		    ((ev[i].events & EPOLLHUP) && cl->closing)) {
			client_close(c, (unsigned)client_index(c, cl));
			continue;
		}
	}
	/* Idle sweep on every tick of the timer; cheap enough (<= 256). */
	if (timer)
		sweep_idle(c);
	arm_timer(c);
	return (int)(c->st.requests - before);
}

void control_destroy(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	while (c->nclients)
		client_close(c, c->nclients - 1);
	if (c->lfd >= 0)
		close(c->lfd);
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->tfd >= 0)
		close(c->tfd);
	/* Unlink only the socket we made, not a successor's. */
	if (stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		unlink(c->path);
	free(c);
}
