/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chirp-sub — a subscriber to chirpd's [publish] socket (ZeroMQ SUB):
 * prints one JSON line per message — its topic, the members of its JSON
 * header, and the payload decoded: a detection list's header under "list"
 * and its records under "detections" (chirp-tap's keys), a map's "min"
 * and "max", chirpd's status under "status" — or detection lists as text,
 * or only counts them (--summary), checking the lists' seq for gaps.
 * Usage: chirp-sub --help, chirp-sub(1), doc/publish.md.
 *
 * UNTRUSTED INPUT
 *   Every message comes from another process over a socket: the frame
 *   count (three), the topic (one of ours), the header's length, then the
 *   list itself through detlist_parse (length, magic, version, record
 *   size, count, channels) before anything is printed. A message that
 *   fails is counted as malformed and skipped.
 *
 * SEQ GAPS
 *   A "det" message's list carries the input CPI's block number (seq).
 *   Successive lists whose seq step by more than one are counted as gaps
 *   (the CPIs between): lists chirpd could not send (publish_det_drops),
 *   lists this subscriber's queue had no room for, or CPIs chirpd never
 *   got (its input drops).
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "detlist.h"
#include "log.h"
#include "timeutil.h"
#include "tool.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_TIMEOUT = 3 };

#define MAX_TOPICS 3
#define HEADER_MAX 4096          /* a JSON header frame, bytes              */
#define PAYLOAD_MAX (256u << 20) /* a message's payload, bytes (a map's)   */

static const char *const topic_names[MAX_TOPICS] = { "det", "map", "status" };
enum { T_DET, T_MAP, T_STATUS };

struct opts {
	const char *endpoint, *ready_file;
	int want[MAX_TOPICS];
	int text, summary, quiet;
	uint64_t count;                 /* -n: exit after N det messages        */
	double timeout_s;
	int rcvhwm;
};

struct sub {
	struct opts o;
	void *ctx, *sock;
	zmq_msg_t frame[3];
	uint64_t messages[MAX_TOPICS], malformed, gaps, incomplete;
	uint64_t last_seq;
	int have_seq, ready;
};

static volatile sig_atomic_t stop_sig;

static void usage(FILE *f)
{
	fprintf(f,
"usage: chirp-sub [options] ENDPOINT\n"
"Subscribe to chirpd's [publish] socket (ENDPOINT: tcp://HOST:PORT or ipc://PATH,\n"
"what chirpctl status says under publish.endpoint) and print a JSON line per\n"
"message: topic, the header's keys, and the payload: a detection list under\n"
"\"list\" and \"detections\", a map's \"min\" and \"max\", chirpd's \"status\".\n"
"  -t, --topics LIST        det, map, status, comma-separated (default det)\n"
"      --text               detection lists as chirp-tap --list prints them\n"
"      --summary            print nothing per message; at the end one JSON line:\n"
"                           messages per topic, det seq gaps, incomplete lists,\n"
"                           malformed messages\n"
"  -n, --count N            exit after N detection lists\n"
"      --timeout S          exit after S seconds (status 3 if -n was not reached)\n"
"      --ready-file PATH    create PATH when the first message has arrived\n"
"      --hwm N              messages queued for this subscriber (ZMQ_RCVHWM,\n"
"                           default 1000)\n"
"  -q, --quiet              errors only\n"
"  -h, --help\n");
}

static const struct option long_opts[] = {
	{ "topics", required_argument, NULL, 't' },
	{ "text", no_argument, NULL, 'T' },
	{ "summary", no_argument, NULL, 'S' },
	{ "count", required_argument, NULL, 'n' },
	{ "timeout", required_argument, NULL, 'o' },
	{ "ready-file", required_argument, NULL, 'r' },
	{ "hwm", required_argument, NULL, 'H' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_topics(struct opts *o, const char *s)
{
	char buf[64], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return tool_bad_arg("--topics", s, "want det, map, status, comma-separated");
	strcpy(buf, s);
	memset(o->want, 0, sizeof(o->want));
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = 0;

		while (k < MAX_TOPICS && strcmp(t, topic_names[k]))
			k++;
		if (k == MAX_TOPICS)
			return tool_bad_arg("--topics", s, "want det, map, status, comma-separated");
		o->want[k] = 1;
	}
	if (!o->want[T_DET] && !o->want[T_MAP] && !o->want[T_STATUS])
		return tool_bad_arg("--topics", s, "want det, map, status, comma-separated");
	return 0;
}

static int opt_one(struct opts *o, int c, const char *a)
{
	uint64_t v;

	switch (c) {
	case 't': return parse_topics(o, a);
	case 'T': o->text = 1; return 0;
	case 'S': o->summary = 1; return 0;
	case 'n':
		if (tool_parse_u64(a, &o->count) < 0 || !o->count)
			return tool_bad_arg("--count", a, "want an integer >= 1");
		return 0;
	case 'o':
		if (tool_parse_double(a, &o->timeout_s) < 0 || !(o->timeout_s > 0))
			return tool_bad_arg("--timeout", a, "want seconds > 0");
		return 0;
	case 'r': o->ready_file = a; return 0;
	case 'H':
		if (tool_parse_u64(a, &v) < 0 || v < 1 || v > 1000000)
			return tool_bad_arg("--hwm", a, "want an integer 1..1000000");
		o->rcvhwm = (int)v;
		return 0;
	case 'q': log_set_level(LOG_ERR); return 0;
	default: return -EINVAL;
	}
}

static int parse_args(struct opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->want[T_DET] = 1;
	o->rcvhwm = 1000;
	while ((c = getopt_long(argc, argv, "t:n:qh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(EXIT_OK);
		}
		if (c == '?' || opt_one(o, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind != argc - 1) {
		log_err(optind < argc ? "one ENDPOINT, not more (see --help)" :
			"give chirpd's publish ENDPOINT, e.g. tcp://127.0.0.1:5556 (see --help)");
		return -EINVAL;
	}
	o->endpoint = argv[optind];
	if (strncmp(o->endpoint, "tcp://", 6) && strncmp(o->endpoint, "ipc://", 6)) {
		log_err("ENDPOINT '%s': want tcp://HOST:PORT or ipc://PATH", o->endpoint);
		return -EINVAL;
	}
	return 0;
}

/* ---- the socket -------------------------------------------------------- */

static int zfail(const char *what)
{
	log_err("%s: %s", what, zmq_strerror(zmq_errno()));
	return -EIO;
}

static int open_sub(struct sub *s)
{
	int linger = 0;

	s->ctx = zmq_ctx_new();
	if (!s->ctx)
		return zfail("zmq_ctx_new");
	s->sock = zmq_socket(s->ctx, ZMQ_SUB);
	if (!s->sock)
		return zfail("zmq_socket");
	if (zmq_setsockopt(s->sock, ZMQ_RCVHWM, &s->o.rcvhwm, sizeof(s->o.rcvhwm)) < 0 ||
	    zmq_setsockopt(s->sock, ZMQ_LINGER, &linger, sizeof(linger)) < 0)
		return zfail("zmq_setsockopt");
	/* A topic is a prefix of the first frame: subscribe to the whole name. */
	for (int k = 0; k < MAX_TOPICS; k++)
		if (s->o.want[k] && zmq_setsockopt(s->sock, ZMQ_SUBSCRIBE, topic_names[k],
						   strlen(topic_names[k])) < 0)
			return zfail("zmq_setsockopt(ZMQ_SUBSCRIBE)");
	if (zmq_connect(s->sock, s->o.endpoint) < 0) {
		log_err("connect %s: %s", s->o.endpoint, zmq_strerror(zmq_errno()));
		return -EIO;
	}
	for (int i = 0; i < 3; i++)
		zmq_msg_init(&s->frame[i]);
	return 0;
}

static void close_sub(struct sub *s)
{
	for (int i = 0; i < 3; i++)
		zmq_msg_close(&s->frame[i]);
	if (s->sock)
		zmq_close(s->sock);
	if (s->ctx)
		zmq_ctx_term(s->ctx);
}

/*
 * One whole message into s->frame[0..2]. Returns the number of frames (a
 * message of more than three is drained and returns 4), 0 when nothing
 * arrived within wait_ms, or -EINTR / -EIO.
 */
static int recv_message(struct sub *s, long wait_ms)
{
	zmq_pollitem_t it = { .socket = s->sock, .events = ZMQ_POLLIN };
	int n = 0, more;
	size_t ml = sizeof(more);

	if (zmq_poll(&it, 1, wait_ms) < 0)
		return zmq_errno() == EINTR ? -EINTR : zfail("zmq_poll");
	if (!(it.revents & ZMQ_POLLIN))
		return 0;
	do {
		zmq_msg_t spare, *m = n < 3 ? &s->frame[n] : &spare;

		if (n >= 3)
			zmq_msg_init(&spare);
		if (zmq_msg_recv(m, s->sock, 0) < 0) {
			if (n >= 3)
				zmq_msg_close(&spare);
			return zmq_errno() == EINTR ? -EINTR : zfail("zmq_msg_recv");
		}
		if (zmq_getsockopt(s->sock, ZMQ_RCVMORE, &more, &ml) < 0)
			more = 0;
		if (n >= 3)
			zmq_msg_close(&spare);
		n++;
	} while (more);
	return n > 3 ? 4 : n;
}

/* ---- messages ---------------------------------------------------------- */

static int topic_of(zmq_msg_t *m)
{
	size_t len = zmq_msg_size(m);

	for (int k = 0; k < MAX_TOPICS; k++)
		if (len == strlen(topic_names[k]) && !memcmp(zmq_msg_data(m), topic_names[k], len))
			return k;
	return -1;
}

static void count_seq(struct sub *s, uint64_t seq)
{
	if (s->have_seq && seq > s->last_seq + 1)
		s->gaps += seq - s->last_seq - 1;
	s->last_seq = seq;
	s->have_seq = 1;
}

/* The JSON header frame's members (its braces stripped) at *members, or
 * NULL when it is not one JSON object on one line. */
static const char *header_members(struct sub *s, int topic, int *len)
{
	const char *h = zmq_msg_data(&s->frame[1]);
	size_t n = zmq_msg_size(&s->frame[1]);

	if (n < 2 || h[0] != '{' || h[n - 1] != '}' || memchr(h, '\n', n) || memchr(h, 0, n)) {
		log_warn("%s message: its header is not one JSON object", topic_names[topic]);
		return NULL;
	}
	*len = (int)(n - 2);
	return h + 1;
}

/* The number after "key": in the header's members (len bytes, not
 * terminated), or NaN where it is absent or null (not finite). */
static float member_float(const char *m, int len, const char *key)
{
	char want[48], num[32];
	int kl = snprintf(want, sizeof(want), "\"%s\":", key);

	for (int i = 0; kl > 0 && i + kl < len; i++) {
		if (memcmp(m + i, want, (size_t)kl))
			continue;
		int n = len - i - kl < (int)sizeof(num) - 1 ? len - i - kl : (int)sizeof(num) - 1;

		memcpy(num, m + i + kl, (size_t)n);
		num[n] = '\0';
		char *end;
		float v = strtof(num, &end);

		return end == num ? NAN : v;
	}
	return NAN;
}

/* A "det" message's list: checked, counted, printed. 0, or -EBADMSG. */
static int det_message(struct sub *s)
{
	struct detlist d;
	char err[200];
	const char *hm;
	int hl;

	if (detlist_parse(&d, zmq_msg_data(&s->frame[2]), zmq_msg_size(&s->frame[2]), err,
			  sizeof(err)) < 0) {
		log_warn("det message: %s", err);
		return -EBADMSG;
	}
	hm = header_members(s, T_DET, &hl);
	if (!hm)
		return -EBADMSG;
	count_seq(s, d.h.seq);
	if (d.h.flags & CHIRP_DET_INCOMPLETE)
		s->incomplete++;
	if (s->o.summary)
		return 0;
	if (s->o.text) {
		detlist_print_text(stdout, &d, member_float(hm, hl, "pointing_az_deg"),
				   member_float(hm, hl, "pointing_el_deg"));
		return 0;
	}
	printf("{\"topic\":\"det\",%.*s,\"list\":", hl, hm);
	detlist_print_json_header(stdout, &d);
	fputs(",\"detections\":", stdout);
	detlist_print_json_records(stdout, &d);
	fputs("}\n", stdout);
	return 0;
}

/* A map: its header and the least and greatest value (float32, host
 * order as chirpd sends it). */
static int map_message(struct sub *s)
{
	const uint8_t *p = zmq_msg_data(&s->frame[2]);
	size_t n = zmq_msg_size(&s->frame[2]) / 4;
	float lo = 0, hi = 0;
	const char *hm;
	int hl;

	if (!(hm = header_members(s, T_MAP, &hl)) || !n || zmq_msg_size(&s->frame[2]) % 4) {
		if (hm)
			log_warn("map message: a payload of %zu bytes is no float32 map",
				 zmq_msg_size(&s->frame[2]));
		return -EBADMSG;
	}
	for (size_t i = 0; i < n; i++) {
		float v;

		memcpy(&v, p + 4 * i, 4);
		if (i == 0 || v < lo)
			lo = v;
		if (i == 0 || v > hi)
			hi = v;
	}
	if (!s->o.summary)
		printf("{\"topic\":\"map\",%.*s,\"min\":%.9g,\"max\":%.9g}\n", hl, hm, lo, hi);
	return 0;
}

/* A status message: its header and chirpd's status JSON under "status". */
static int status_message(struct sub *s)
{
	const char *p = zmq_msg_data(&s->frame[2]), *hm;
	size_t n = zmq_msg_size(&s->frame[2]);
	int hl;

	if (!(hm = header_members(s, T_STATUS, &hl)))
		return -EBADMSG;
	if (n < 2 || p[0] != '{' || p[n - 1] != '}' || memchr(p, '\n', n) || memchr(p, 0, n)) {
		log_warn("status message: its payload is not one JSON object");
		return -EBADMSG;
	}
	if (!s->o.summary)
		printf("{\"topic\":\"status\",%.*s,\"status\":%.*s}\n", hl, hm, (int)n, p);
	return 0;
}

/* Check one message (frames, topic, header size), then hand it on. */
static void message(struct sub *s, int frames)
{
	int topic = frames == 3 ? topic_of(&s->frame[0]) : -1;
	int rc;

	if (topic < 0 || zmq_msg_size(&s->frame[1]) > HEADER_MAX ||
	    zmq_msg_size(&s->frame[2]) > PAYLOAD_MAX) {
		s->malformed++;
		return;
	}
	rc = topic == T_DET ? det_message(s) : topic == T_MAP ? map_message(s) : status_message(s);
	if (rc < 0) {
		s->malformed++;
		return;
	}
	s->messages[topic]++;
	if (!s->o.summary)
		fflush(stdout);
}

static void mark_ready(struct sub *s)
{
	FILE *f;

	if (s->ready || !s->o.ready_file)
		return;
	s->ready = 1;
	f = fopen(s->o.ready_file, "w");
	if (!f || fclose(f) != 0)
		log_warn("--ready-file %s: %s", s->o.ready_file, strerror(errno));
}

static void print_summary(const struct sub *s)
{
	printf("{\"messages\":{\"det\":%" PRIu64 ",\"map\":%" PRIu64 ",\"status\":%" PRIu64
	       "},\"det_seq_gaps\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"malformed\":%" PRIu64
	       "}\n", s->messages[T_DET], s->messages[T_MAP], s->messages[T_STATUS], s->gaps,
	       s->incomplete, s->malformed);
	fflush(stdout);
}

/* Receive until -n lists, --timeout, or a signal. EXIT_OK, EXIT_TIMEOUT
 * (-n not reached in time) or EXIT_ERR. */
static int run(struct sub *s)
{
	double end = s->o.timeout_s > 0 ? mono_s() + s->o.timeout_s : 0;

	while (!stop_sig && !(s->o.count && s->messages[T_DET] >= s->o.count)) {
		long wait_ms = 200;   /* look at the stop flag this often */
		int n;

		if (end) {
			double left = end - mono_s();

			if (left <= 0)
				return s->o.count ? EXIT_TIMEOUT : EXIT_OK;
			if (left < 0.2)
				wait_ms = (long)(left * 1000) + 1;
		}
		n = recv_message(s, wait_ms);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return EXIT_ERR;
		if (n == 0)
			continue;
		mark_ready(s);
		message(s, n);
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	static struct sub s;
	int ret = EXIT_ERR;

	log_init(argv[0]);
	if (parse_args(&s.o, argc, argv) < 0)
		return EXIT_USAGE;
	if (tool_catch_signals(&stop_sig) < 0)
		return EXIT_ERR;
	if (open_sub(&s) == 0) {
		log_info("subscribed to %s%s%s%s", s.o.endpoint, s.o.want[T_DET] ? " det" : "",
			 s.o.want[T_MAP] ? " map" : "", s.o.want[T_STATUS] ? " status" : "");
		ret = run(&s);
		if (s.o.summary)
			print_summary(&s);
	}
	close_sub(&s);
	return ret;
}
