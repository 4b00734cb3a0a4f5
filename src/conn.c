// SPDX-License-Identifier: MIT
/*
 * The transport. We own the socket (non-blocking, close-on-exec from its
 * creation, so COMMAND never inherits it) and every wait on it is a poll()
 * with a deadline; hiredis only parses replies (redisReader, which both
 * 0.14 and 1.x have in the same shape), and commands are formatted here
 * (conn_format). So none of hiredis 0.14's context traps apply (a
 * timeout that kills the context, SO_RCVTIMEO forgotten on reconnect, no
 * FD_CLOEXEC), a blocked read can be interrupted
 * by the caller's own poll, and one transport seam serves every caller.
 * TLS (tls.c) is the same seam with OpenSSL between the socket and the
 * reader: every read and write goes through sock_read and sock_write, and
 * decrypted bytes waiting inside OpenSSL count as pending.
 *
 * Round trips are saved in one place, the request queue: a request not
 * waited for (a CONFIG GET) is formatted into `out` and goes out with the
 * next command, and its reply, read first, goes to it (struct req, in the
 * order written).
 */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "exitcode.h"
#include "resolve.h"
#include "sig.h"
#include "tls.h"
#include "util.h"

#define READ_CHUNK 16384
/* How long a login waits for a --password-file that is not a regular
 * file (a FIFO, a terminal) to offer a line. */
#define PASSWORD_WAIT_MS 100
#define INTERRUPTED "interrupted by a signal"

/*
 * A request whose reply is owed, in the order written (as hiredis
 * async.c's reply callbacks): replies come back in that order, so each
 * reaches its own request. The caller's own command, waited for in place
 * (conn_command, conn_recv), is never among them: everything queued was
 * written before it.
 */
struct req {
	conn_done_fn done;		/* takes the reply */
	void *ctx;
	enum peer_cmd cmd;		/* its command */
};

#define QUEUE_MAX 8

struct conn {
	const struct conn_cfg *cfg;
	int fd;				/* -1 while closed */
	int connecting;			/* conn_connect_start's, or -1 */
	int64_t connecting_by;		/* ... within its own deadline */
	struct tls_session *tls;	/* over TLS: the session on fd */
	int heard;			/* any byte read on this fd */
	int last_errno;			/* last I/O failure's; 0: EOF */
	struct sockaddr_storage peer;	/* TCP: where fd is connected */
	socklen_t peer_len;
	redisReader *reader;
	struct reply *stash;		/* parsed, not yet handed out */
	int64_t cmd_timeout_ms;
	int64_t login_ms;		/* in a login: the time it names */
	struct failure fail;
	/* Requests formatted, not yet written: they go out in one write
	 * with the next command (or before the next read). */
	char *out;
	size_t out_len;
	struct req q[QUEUE_MAX];	/* replies owed, oldest first */
	int nq;
	/* The caller's own commands written, replies owed, and the
	 * command of the oldest (CMD_NONE once that is not known). */
	int owed;
	enum peer_cmd sent;
};

struct conn *
conn_new(const struct conn_cfg *cfg, int64_t cmd_timeout_ms)
{
	struct conn *cn = xcalloc(1, sizeof(*cn));

	cn->cfg = cfg;
	cn->fd = cn->connecting = -1;
	cn->cmd_timeout_ms = cmd_timeout_ms;
	return cn;
}

void
conn_free(struct conn *cn)
{
	if (cn == NULL)
		return;
	conn_close(cn);
	if (cn->connecting >= 0)
		close(cn->connecting);
	free(cn);
}

const struct failure *
conn_failure(const struct conn *cn)
{
	return &cn->fail;
}

int
conn_is_open(const struct conn *cn)
{
	return cn->fd >= 0;
}

int
conn_fd(const struct conn *cn)
{
	return cn->fd;
}

void
conn_set_timeout(struct conn *cn, int64_t cmd_ms)
{
	cn->cmd_timeout_ms = cmd_ms;
}

int64_t
conn_timeout(const struct conn *cn)
{
	return cn->cmd_timeout_ms;
}

static void
drop(struct conn *cn, int reset)
{
	/* Before the close: a healthy session says close_notify. */
	tls_free(cn->tls);
	cn->tls = NULL;
	if (cn->fd >= 0) {
		if (reset) {
			struct linger lg = { 1, 0 };

			setsockopt(cn->fd, SOL_SOCKET, SO_LINGER, &lg,
			    sizeof(lg));
		}
		close(cn->fd);
		cn->fd = -1;
	}
	if (cn->reader) {
		redisReaderFree(cn->reader);
		cn->reader = NULL;
	}
	reply_free(cn->stash);
	cn->stash = NULL;
	/* Replies still owed die with the connection, unseen; requests
	 * not yet written, unsent. */
	cn->nq = 0;
	cn->owed = 0;
	cn->sent = CMD_NONE;
	free(cn->out);
	cn->out = NULL;
	cn->out_len = 0;
}

void
conn_close(struct conn *cn)
{
	drop(cn, cn->fail.status != 0);
}

/* hiredis's reply to ours; NULL for a kind RESP2 does not have. */
static struct reply *
convert(const redisReply *h)
{
	struct reply *r;
	size_t i;

	if (h->type < REDIS_REPLY_STRING || h->type > REDIS_REPLY_ERROR)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->type = (enum reply_type)h->type;
	switch (r->type) {
	case REPLY_INTEGER:
		r->integer = h->integer;
		break;
	case REPLY_ARRAY:
		r->element = xcalloc(h->elements ? h->elements : 1,
		    sizeof(*r->element));
		for (i = 0; i < h->elements; i++) {
			if ((r->element[i] = convert(h->element[i])) == NULL) {
				reply_free(r);
				return NULL;
			}
			r->elements = i + 1;
		}
		break;
	case REPLY_NIL:
		break;
	default:
		r->len = h->len;
		r->str = xmalloc(h->len + 1);
		memcpy(r->str, h->str, h->len);
		r->str[h->len] = '\0';
		break;
	}
	return r;
}

/* A complete reply from the reader: 1 with *out, 0 none yet, -1 junk. */
static int
take(redisReader *rd, struct reply **out)
{
	void *h = NULL;

	if (redisReaderGetReply(rd, &h) != REDIS_OK) {
		/* The reader's own malloc failed: not the peer's fault. */
		if (rd->err == REDIS_ERR_OOM)
			oom();
		return -1;
	}
	if (h == NULL)
		return 0;
	*out = convert(h);
	freeReplyObject(h);
	return *out ? 1 : -1;
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *
conn_library(void)
{
	return "hiredis " STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "."
	    STR(HIREDIS_PATCH);
}

int
conn_parse(const char *buf, size_t len, struct reply **out)
{
	redisReader *rd = redisReaderCreate();
	int r;

	if (rd == NULL)
		return -1;
	r = redisReaderFeed(rd, buf, len) == REDIS_OK ? take(rd, out) : -1;
	redisReaderFree(rd);
	return r;
}

/*
 * The socket's I/O, in the clear or through TLS: as recv(2) and send(2)
 * on the non-blocking fd (-1 with errno EAGAIN: wait for *want). A TLS
 * failure is EPROTO, its words in the session (tls_error).
 */
static ssize_t
sock_read(struct conn *cn, void *buf, size_t len, short *want)
{
	ssize_t n;

	*want = POLLIN;
	n = cn->tls ? tls_read(cn->tls, buf, len, want) :
	    recv(cn->fd, buf, len, 0);
	if (n > 0)
		cn->heard = 1;
	return n;
}

static ssize_t
sock_write(struct conn *cn, const void *buf, size_t len, short *want)
{
	*want = POLLOUT;
	return cn->tls ? tls_write(cn->tls, buf, len, want) :
	    send(cn->fd, buf, len, MSG_NOSIGNAL);
}

/*
 * A server that turns us away at once (maxclients) writes its error and
 * closes. If that beats our first command, the write fails (EPIPE, or
 * ECONNRESET) with the reason still unread in our socket: read it, as an
 * error reply, rather than report a bare "Broken pipe". 0 if there was one
 * (recorded), else the errno to report: e, or EPROTO for a TLS alert.
 */
static int
last_words(struct conn *cn, const char *what, int e)
{
	char buf[128];
	short want;
	ssize_t n = sock_read(cn, buf, sizeof(buf) - 1, &want);
	struct reply r = { .type = REPLY_ERROR };

	/* Over TLS the last words may be an alert: under TLS 1.3 the
	 * server's verdict on our client certificate, sent just before it
	 * hung up on the command we were writing. */
	if (n < 0 && errno == EPROTO && cn->tls)
		return EPROTO;
	if (n < 2 || buf[0] != '-')
		return e;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	r.str = buf + 1;
	r.len = strlen(r.str);
	failure_from_reply(&cn->fail, what, &r);
	return 0;
}

/* The I/O of `what` failed with errno e (0: the peer closed): -1. */
static int
io_failed(struct conn *cn, const char *what, int e)
{
	char why[256];
	int st;

	cn->last_errno = e;
	if ((e == EPIPE || e == ECONNRESET) &&
	    (e = last_words(cn, what, e)) == 0) {
		drop(cn, 1);
		return -1;
	}
	if (e == EPROTO && cn->tls) {
		/* Under TLS 1.3 the server's verdict on our client certificate
		 * comes after the handshake: here, at our first read (or as
		 * the last words of a write it cut). */
		st = tls_error(cn->tls, why, sizeof(why));
		failure_make(&cn->fail, FAIL_TLS, st, "%s", why);
	} else if (e == ETIMEDOUT)
		failure_make(&cn->fail, FAIL_TIMEOUT, RL_EXIT_UNAVAILABLE,
		    "%s: no answer within %lldms", what,
		    (long long)(cn->login_ms ? cn->login_ms :
		    cn->cmd_timeout_ms));
	else if (e == ECANCELED)
		failure_make(&cn->fail, FAIL_INTERRUPTED, RL_EXIT_UNAVAILABLE,
		    "%s: %s", what, INTERRUPTED);
	else if (e == 0)
		failure_make(&cn->fail, FAIL_DROPPED, RL_EXIT_UNAVAILABLE,
		    "%s: the server closed the connection", what);
	else
		failure_make(&cn->fail, FAIL_DROPPED, RL_EXIT_UNAVAILABLE,
		    "%s: %s", what, strerror(e));
	/*
	 * The peer closed or reset the connection with replies owed: the
	 * command it closed on, as far as the order tells. A proxy that
	 * does not take a command closes on it unanswered, and with it goes
	 * any answer still owed to what was written ahead of it in the same
	 * write: so the guess is the first owed request, the queued ones (a
	 * check sent ahead) before the caller's own.
	 */
	if (e == 0 || e == ECONNRESET || e == EPIPE)
		cn->fail.closed_on = cn->nq > 0 ? cn->q[0].cmd :
		    cn->owed > 0 ? cn->sent : CMD_NONE;
	drop(cn, 1);
	return -1;
}

/* Something answered, so it is reachable; but it is not Redis (an HTTP
 * server, a wrong port): 76, not 69. -1. */
static int
not_redis(struct conn *cn, const char *what)
{
	/* A TLS port may answer plain text with an alert record. */
	if (cn->tls == NULL && cn->reader && tls_looks_like_tls(
	    (const unsigned char *)cn->reader->buf, cn->reader->len))
		failure_make(&cn->fail, FAIL_TLS_PLAIN, RL_EXIT_UNAVAILABLE,
		    "%s", TLS_PLAIN_TO_TLS);
	else
		failure_make(&cn->fail, FAIL_NOT_REDIS, RL_EXIT_PROTOCOL,
		    "%s: the answer is not in the Redis protocol (%s)", what,
		    cn->reader && cn->reader->errstr[0] ?
		    cn->reader->errstr : "unreadable reply");
	drop(cn, 1);
	return -1;
}

/* Wait for ev on the socket until deadline: 1 ready, 0 time is up, -1
 * errno (ECANCELED: a stop signal, when this thread watches for them). */
static int
wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p[2] = { { .fd = fd, .events = ev } };
	int n;

	for (;;) {
		if (deadline - mono_ms() <= 0)
			return 0;
		n = sig_poll(p, 1, deadline_poll_ms(deadline));
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

static int
write_all(struct conn *cn, const char *buf, size_t len, int64_t deadline,
    const char *what)
{
	ssize_t n;
	short want;
	int w;

	while (len > 0) {
		n = sock_write(cn, buf, len, &want);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return io_failed(cn, what, errno);
		if ((w = wait_fd(cn->fd, want, deadline)) <= 0)
			return io_failed(cn, what, w == 0 ? ETIMEDOUT : errno);
	}
	return 0;
}

/* Decimal digits of n. */
static size_t
digits(size_t n)
{
	size_t d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* "<c><n>\r\n" at p; the byte after it. */
static char *
put_head(char *p, char c, size_t n)
{
	size_t d = digits(n), i;

	*p++ = c;
	for (i = d; i > 0; i--, n /= 10)
		p[i - 1] = (char)('0' + n % 10);
	p += d;
	*p++ = '\r';
	*p++ = '\n';
	return p;
}

size_t
conn_format_len(int argc, const size_t *lens)
{
	size_t n = 3 + digits((size_t)argc);
	int i;

	for (i = 0; i < argc; i++)
		n += 5 + digits(lens[i]) + lens[i];
	return n;
}

/*
 * The command in RESP at buf (conn_format_len bytes), as hiredis's
 * redisFormatCommandArgv writes it, without its sprintf for every
 * length, which costs a short run more than the rest of the formatting.
 */
void
conn_format(char *buf, int argc, const char **argv, const size_t *lens)
{
	int i;

	buf = put_head(buf, '*', (size_t)argc);
	for (i = 0; i < argc; i++) {
		buf = put_head(buf, '$', lens[i]);
		memcpy(buf, argv[i], lens[i]);
		buf += lens[i];
		*buf++ = '\r';
		*buf++ = '\n';
	}
}

/* Append a command to the buffer *buf of *len bytes. */
static void
append_cmd(char **buf, size_t *len, int argc, const char **argv,
    const size_t *lens)
{
	size_t n = conn_format_len(argc, lens);

	*buf = xrealloc(*buf, *len + n);
	conn_format(*buf + *len, argc, argv, lens);
	*len += n;
}

/* Write what is queued, with the command argv (argc 0: none) after it, in
 * one write. */
static int
flush(struct conn *cn, int argc, const char **argv, const size_t *lens,
    int64_t deadline, const char *what)
{
	char *buf = cn->out;
	size_t n = cn->out_len;
	int st;

	cn->out = NULL;
	cn->out_len = 0;
	if (argc > 0)
		append_cmd(&buf, &n, argc, argv, lens);
	st = write_all(cn, buf, n, deadline, what);
	free(buf);
	return st;
}

static int
send_by(struct conn *cn, int argc, const char **argv, const size_t *lens,
    int64_t deadline)
{
	if (cn->fd < 0) {
		if (cn->fail.status == 0)
			failure_make(&cn->fail, FAIL_DROPPED,
			    RL_EXIT_UNAVAILABLE, "not connected");
		return -1;
	}
	failure_clear(&cn->fail);
	if (cn->owed++ == 0)
		cn->sent = peer_cmd(argv[0], lens[0]);
	return flush(cn, argc, argv, lens, deadline, argv[0]);
}

int
conn_send(struct conn *cn, int argc, const char **argv, const size_t *lens)
{
	return send_by(cn, argc, argv, lens, mono_ms() + cn->cmd_timeout_ms);
}

int
conn_queue(struct conn *cn, const struct conn_req *rq)
{
	if (cn->fd < 0 || cn->nq == QUEUE_MAX)
		return -1;
	cn->q[cn->nq++] = (struct req){ .done = rq->done, .ctx = rq->ctx,
	    .cmd = peer_cmd(rq->argv[0], rq->lens[0]) };
	append_cmd(&cn->out, &cn->out_len, rq->argc, rq->argv, rq->lens);
	return 0;
}

int
conn_pending(struct conn *cn)
{
	/* Bytes the reader holds count only as a whole reply (parsed into
	 * the stash), or as junk that conn_recv will then report. */
	if (cn->stash != NULL)
		return 1;
	/* Decrypted bytes inside OpenSSL: poll() cannot see them. Once
	 * read into the reader, they count as above. */
	if (cn->tls && tls_pending(cn->tls))
		return 1;
	if (cn->reader == NULL || cn->reader->len <= cn->reader->pos)
		return 0;
	return take(cn->reader, &cn->stash) != 0;
}

static int
recv_one(struct conn *cn, int64_t deadline, struct reply **out,
    const char *what, int timeout_fails)
{
	char buf[READ_CHUNK];
	ssize_t n;
	short want;
	int w;

	*out = NULL;
	if (cn->fd < 0) {
		if (cn->fail.status == 0)
			failure_make(&cn->fail, FAIL_DROPPED,
			    RL_EXIT_UNAVAILABLE, "not connected");
		return -1;
	}
	for (;;) {
		if (cn->stash) {
			*out = cn->stash;
			cn->stash = NULL;
			return 1;
		}
		switch (take(cn->reader, out)) {
		case 1:
			return 1;
		case -1:
			return not_redis(cn, what);
		}
		n = sock_read(cn, buf, sizeof(buf), &want);
		if (n > 0) {
			if (redisReaderFeed(cn->reader, buf, (size_t)n) !=
			    REDIS_OK)
				oom();
			continue;
		}
		if (n == 0)
			return io_failed(cn, what, 0);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return io_failed(cn, what, errno);
		/* ECANCELED: a stop signal came while we waited (sig.h):
		 * given up as on a timeout, now. The waiting loop above
		 * reads the signal and undoes what may have been granted. */
		if ((w = wait_fd(cn->fd, want, deadline)) < 0 ||
		    (w == 0 && timeout_fails))
			return io_failed(cn, what, w == 0 ? ETIMEDOUT : errno);
		if (w == 0)
			return 0;
	}
}

void
conn_give_up(struct conn *cn, const char *what)
{
	/* A late reply is still possible: the reset drops it, and the
	 * command with it should the kernel still hold it. */
	(void)io_failed(cn, what, ETIMEDOUT);
}

/* The next reply; those owed to queued requests go to them first. */
static int
recv_by(struct conn *cn, int64_t deadline, struct reply **out,
    const char *what, int timeout_fails)
{
	struct req e;
	int st;

	if (cn->out_len > 0 && flush(cn, 0, NULL, NULL, mono_ms() +
	    cn->cmd_timeout_ms, what) < 0)
		return -1;
	while (cn->nq > 0) {
		if ((st = recv_one(cn, deadline, out, what,
		    timeout_fails)) <= 0)
			return st;
		e = cn->q[0];
		memmove(cn->q, cn->q + 1, (size_t)--cn->nq * sizeof(cn->q[0]));
		e.done(e.ctx, *out);
		reply_free(*out);
		*out = NULL;
	}
	if ((st = recv_one(cn, deadline, out, what, timeout_fails)) > 0 &&
	    cn->owed > 0 && --cn->owed > 0)
		cn->sent = CMD_NONE;
	return st;
}

int
conn_recv(struct conn *cn, int64_t deadline, const char *what,
    struct reply **out)
{
	return recv_by(cn, deadline, out, what, 0);
}

static struct reply *
command_by(struct conn *cn, int argc, const char **argv, const size_t *lens,
    int64_t deadline)
{
	struct reply *r;

	if (send_by(cn, argc, argv, lens, deadline) < 0)
		return NULL;
	if (recv_by(cn, deadline, &r, argv[0], 1) < 0)
		return NULL;
	return r;
}

struct reply *
conn_command(struct conn *cn, int argc, const char **argv,
    const size_t *lens)
{
	return command_by(cn, argc, argv, lens, mono_ms() +
	    cn->cmd_timeout_ms);
}

static void
tune_tcp(int fd)
{
	int one = 1, idle = 15, intvl = 5, cnt = 3;

	/* One small command per round trip: Nagle would only delay it. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A peer that vanished (a cut network) shows within ~30 s even on
	 * an idle connection; our own timeouts cover the rest. */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* Start a non-blocking connect: the fd, connected (*done) or on its way,
 * or -1 (errno). */
static int
connect_start(int family, const struct sockaddr *sa, socklen_t salen,
    int *done)
{
	int fd, e;

	*done = 0;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, sa, salen) == 0)
		*done = 1;
	else if (errno != EINPROGRESS && errno != EAGAIN) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Wait for a connect on its way: 0, or -1 (errno) with fd closed. */
static int
connect_wait(int fd, int64_t deadline)
{
	int e, w;
	socklen_t el = sizeof(e);

	struct pollfd p = { .fd = fd, .events = POLLOUT };

	/* Past the deadline (spent waiting for another connect started
	 * with this one), wait_fd does not look: a connect long done must
	 * not count as timed out. */
	if ((w = wait_fd(fd, POLLOUT, deadline)) == 0)
		w = poll(&p, 1, 0);
	if (w <= 0) {
		if (w == 0)
			errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		goto fail;
	if (e == 0)
		return 0;
	errno = e;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* A non-blocking connect, waited for: the fd, or -1 (errno). */
static int
connect_one(int family, const struct sockaddr *sa, socklen_t salen,
    int64_t deadline)
{
	int done, fd = connect_start(family, sa, salen, &done);

	if (fd < 0 || done)
		return fd;
	return connect_wait(fd, deadline) == 0 ? fd : -1;
}

int
conn_connect_start(struct conn *cn, int64_t deadline)
{
	const struct endpoint *ep = &cn->cfg->ep;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST }, *ai;
	char ps[16];
	int done;

	/* Not a unix socket: one with a full backlog refuses at once
	 * (EAGAIN), and has nothing under way to wait for. */
	if (ep->db != 0 || ep->tls || cn->fd >= 0 || ep->kind != EP_TCP)
		return 0;
	if (cn->connecting >= 0)
		return 1;
	snprintf(ps, sizeof(ps), "%d", ep->port);
	/* A name could wait on a name server: that is for conn_connect,
	 * which a caller can run on threads of their own. */
	if (getaddrinfo(ep->host, ps, &hints, &ai) != 0)
		return 0;
	cn->connecting = connect_start(ai->ai_family, ai->ai_addr,
	    ai->ai_addrlen, &done);
	cn->connecting_by = deadline;
	freeaddrinfo(ai);
	return cn->connecting >= 0;
}

/* No connection: the failure, as "where: why" (where NULL: why alone);
 * -1. */
static int
unreachable(struct conn *cn, const char *where, const char *why)
{
	failure_make(&cn->fail, FAIL_UNREACHABLE, RL_EXIT_UNAVAILABLE,
	    "%s%s%s", where ? where : "", where ? ": " : "", why);
	return -1;
}

/*
 * conn_connect_start's connect, waited for by its own deadline (those
 * started together end together, however many are stalled) if sooner:
 * 0 with cn->fd (tuned) and cn->peer set, or -1 with the failure recorded (an
 * address has no other to try).
 */
static int
connected(struct conn *cn, int64_t deadline)
{
	int fd = cn->connecting;

	cn->connecting = -1;
	if (connect_wait(fd, cn->connecting_by < deadline ?
	    cn->connecting_by : deadline) < 0)
		return unreachable(cn, NULL, strerror(errno));
	cn->peer_len = sizeof(cn->peer);
	if (getpeername(fd, (struct sockaddr *)&cn->peer, &cn->peer_len) < 0)
		cn->peer_len = 0;
	cn->fd = fd;
	tune_tcp(fd);
	return 0;
}

static int
open_unix(struct conn *cn, const char *path, int64_t deadline)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sun.sun_path))
		return unreachable(cn, NULL, "socket path too long");
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((cn->fd = connect_one(AF_UNIX, (struct sockaddr *)&sun,
	    sizeof(sun), deadline)) < 0)
		return unreachable(cn, NULL, strerror(errno));
	return 0;
}

/* Every address of host in turn, within the one deadline. */
static int
open_tcp(struct conn *cn, const char *host, int port, int64_t deadline,
    int say_where)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM }, *ai, *a;
	char ps[16], where[300];
	int g, e = ETIMEDOUT;

	if (cn->connecting >= 0)
		return connected(cn, deadline);
	snprintf(ps, sizeof(ps), "%d", port);
	if ((g = resolve(host, ps, &hints, deadline, &ai)) != 0)
		return unreachable(cn, say_where ? host : NULL,
		    g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
	for (a = ai; a != NULL && mono_ms() < deadline; a = a->ai_next) {
		cn->fd = connect_one(a->ai_family, a->ai_addr, a->ai_addrlen,
		    deadline);
		if (cn->fd >= 0) {
			memcpy(&cn->peer, a->ai_addr, a->ai_addrlen);
			cn->peer_len = a->ai_addrlen;
			break;
		}
		e = errno;
	}
	freeaddrinfo(ai);
	snprintf(where, sizeof(where), "%s:%d", host, port);
	if (cn->fd < 0)
		return unreachable(cn, say_where ? where : NULL, strerror(e));
	tune_tcp(cn->fd);
	return 0;
}

/*
 * What fd offers of its first line, into buf (NUL-terminated): its
 * length, or -1. A regular file is read; anything else (a FIFO, a
 * terminal) only as far as it offers by `until`, or a stop signal.
 */
static ssize_t
first_line(int fd, char *buf, size_t len, int regular, int64_t until)
{
	struct pollfd p[2];
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len && memchr(buf, '\n', n) == NULL) {
		p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (!regular && (r = sig_poll(p, 1, deadline_poll_ms(until)))
		    <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && (errno == EINTR || (!regular &&
		    errno == EAGAIN)))
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

/*
 * The password for this login into buf: the first line of
 * --password-file as it is now, or the one given when there is no file
 * or it cannot be read whole (caught empty in the middle of a rewrite).
 * A file that is not a regular one is read only for what it offers
 * within PASSWORD_WAIT_MS (and by `deadline`): a FIFO nobody writes to
 * again, or a terminal whose user typed the password once, has no more
 * to give, and the one read at the start is used; a FIFO whose writer
 * serves every reader is read again.
 */
static const char *
login_password(const struct conn_cfg *cfg, char *buf, size_t len,
    int64_t deadline)
{
	int64_t until = mono_ms() + PASSWORD_WAIT_MS;
	struct stat st;
	ssize_t n;
	int fd;

	if (cfg->password_file == NULL || (fd = open(cfg->password_file,
	    O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0)
		return cfg->password;
	if (fstat(fd, &st) < 0)
		st.st_mode = 0;
	n = first_line(fd, buf, len, S_ISREG(st.st_mode), until < deadline ?
	    until : deadline);
	close(fd);
	n = n > 0 ? (ssize_t)strcspn(buf, "\r\n") : 0;
	if (n == 0)
		return cfg->password;
	buf[n] = '\0';
	return buf;
}

/*
 * Write the login: AUTH [user] password (--password-file read again), or
 * a PING when there is no password (a server that accepts but never
 * answers must cost the connect timeout here). 0, or the status.
 */
static int
login_send(struct conn *cn, int64_t deadline)
{
	const struct endpoint *ep = &cn->cfg->ep;
	const char *argv[3];
	size_t lens[3];
	char pw[1024];
	int argc = 0, i, st;

	if (cn->cfg->password == NULL)
		argv[argc++] = "PING";
	else {
		argv[argc++] = "AUTH";
		if (ep->user)
			argv[argc++] = ep->user;
		argv[argc++] = login_password(cn->cfg, pw, sizeof(pw),
		    deadline);
	}
	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	st = send_by(cn, argc, argv, lens, deadline);
	explicit_bzero(pw, sizeof(pw));
	return st < 0 ? cn->fail.status : 0;
}

/* The login's answer by the deadline: 0, or the status. */
static int
login_answer(struct conn *cn, int64_t deadline)
{
	int auth = cn->cfg->password != NULL;
	struct reply *r;

	if (recv_by(cn, deadline, &r, auth ? "AUTH" : "PING", 1) < 0)
		return cn->fail.status;
	if (r->type == REPLY_ERROR) {
		failure_from_reply(&cn->fail, auth ? "authentication failed" :
		    "PING", r);
		/* Any error answer to AUTH is a refusal of the credentials;
		 * a peer that is not Redis (no error answer) stays 76. */
		if (auth && cn->fail.status == RL_EXIT_PROTOCOL) {
			cn->fail.status = RL_EXIT_NOPERM;
			cn->fail.kind = FAIL_CREDENTIALS;
		}
	}
	reply_free(r);
	return cn->fail.status;
}

/* The login, then SELECT db (with no password, SELECT is the login). */
static int
handshake(struct conn *cn, int64_t deadline, int db)
{
	char dbs[16];
	const char *argv[2] = { "SELECT", dbs };
	size_t lens[2] = { 6, 0 };
	struct reply *r;
	int st;

	if ((cn->cfg->password || db == 0) &&
	    ((st = login_send(cn, deadline)) != 0 ||
	    (st = login_answer(cn, deadline)) != 0))
		return st;
	if (db == 0)
		return 0;
	lens[1] = (size_t)snprintf(dbs, sizeof(dbs), "%d", db);
	if ((r = command_by(cn, 2, argv, lens, deadline)) == NULL)
		return cn->fail.status;
	if (r->type == REPLY_ERROR)
		failure_from_reply(&cn->fail, "cannot select the database", r);
	reply_free(r);
	return cn->fail.status;
}

/*
 * The TLS handshake on the fresh TCP socket, by the deadline (tls.c);
 * 0, or its status with the failure recorded (where: "host:port: ").
 */
static int
start_tls(struct conn *cn, const char *host, int port, int64_t deadline)
{
	char why[256];
	int st;

	cn->tls = tls_handshake(cn->fd, host ? host : cn->cfg->ep.host,
	    deadline, &st, why, sizeof(why));
	if (cn->tls != NULL)
		return 0;
	if (host)
		failure_make(&cn->fail, FAIL_TLS, st, "%s:%d: %s", host, port,
		    why);
	else
		failure_make(&cn->fail, FAIL_TLS, st, "%s", why);
	return st;
}

/*
 * A plain-text connection the server closed or reset at our first
 * command, before a byte came back, may have reached a TLS port: one
 * throwaway TLS hello to the same address tells (tls_probe: no command,
 * no secret), and then the line says so.
 */
static void
maybe_tls_port(struct conn *cn, int64_t deadline)
{
	if (cn->cfg->ep.tls || cn->heard || cn->peer_len == 0 ||
	    cn->fail.status != RL_EXIT_UNAVAILABLE ||
	    cn->fail.kind == FAIL_INTERRUPTED ||
	    (cn->last_errno != 0 && cn->last_errno != ECONNRESET &&
	    cn->last_errno != EPIPE))
		return;
	if (tls_probe((const struct sockaddr *)&cn->peer, cn->peer_len,
	    deadline))
		failure_make(&cn->fail, FAIL_TLS_PLAIN, RL_EXIT_UNAVAILABLE,
		    "%s", TLS_PLAIN_TO_TLS);
}

/*
 * conn_connect up to the login: the socket to host:port (NULL: the cfg's
 * own endpoint), TLS, the reader. 0 with login_ms set, or the status (cn
 * closed). A past *deadline is moved to a ms from now.
 */
static int
connect_socket(struct conn *cn, const char *host, int port,
    int64_t *deadline)
{
	int64_t shown;
	int st;

	drop(cn, 0);
	/* Started for the cfg's own TCP address only (never a unix one). */
	if (cn->connecting >= 0 && host != NULL) {
		close(cn->connecting);
		cn->connecting = -1;
	}
	failure_clear(&cn->fail);
	cn->peer_len = 0;
	cn->last_errno = 0;
	cn->heard = 0;
	if (*deadline <= mono_ms())
		*deadline = mono_ms() + 1;
	/*
	 * A server that accepts and then stays silent counts against the
	 * same connect timeout, not a fresh command timeout, and the
	 * message names it; or a deadline well short of --connect-timeout
	 * (-w bounds the wait), to the 10 ms.
	 */
	shown = cn->cfg->connect_timeout_ms;
	if (*deadline - mono_ms() + 50 < shown)
		shown = (*deadline - mono_ms() + 5) / 10 * 10;
	if (host == NULL && cn->cfg->ep.kind == EP_UNIX)
		st = open_unix(cn, cn->cfg->ep.path, *deadline);
	else if (host == NULL)
		st = open_tcp(cn, cn->cfg->ep.host, cn->cfg->ep.port,
		    *deadline, 0);
	else
		st = open_tcp(cn, host, port, *deadline, 1);
	if (st < 0)
		return cn->fail.status;
	/* TLS for TCP only: a unix socket stays on this host. */
	if (cn->cfg->ep.tls && (host != NULL || cn->cfg->ep.kind != EP_UNIX) &&
	    (st = start_tls(cn, host, port, *deadline)) != 0) {
		drop(cn, 1);
		return st;
	}
	if ((cn->reader = redisReaderCreate()) == NULL)
		oom();
	cn->login_ms = shown;
	return 0;
}

/* The login failed: its status, cn closed (told apart from a TLS port
 * first, by the deadline). */
static int
login_failed(struct conn *cn, int64_t deadline)
{
	int st;

	maybe_tls_port(cn, deadline);
	st = cn->fail.status;
	conn_close(cn);
	return st;
}

/* conn_connect, selecting database db. */
static int
connect_db(struct conn *cn, const char *host, int port, int64_t deadline,
    int db)
{
	int st;

	if ((st = connect_socket(cn, host, port, &deadline)) != 0)
		return st;
	st = handshake(cn, deadline, db);
	cn->login_ms = 0;
	return st != 0 ? login_failed(cn, deadline) : 0;
}

/* A connect that a stop signal ended (or that failed while one came):
 * its status, the failure said as interrupted. */
static int
connect_stopped(struct conn *cn)
{
	failure_make(&cn->fail, FAIL_INTERRUPTED, RL_EXIT_UNAVAILABLE,
	    "connect: %s", INTERRUPTED);
	return cn->fail.status;
}

int
conn_connect(struct conn *cn, const char *host, int port, int64_t deadline)
{
	struct failure closed;
	int st;

	if (sig_stopping()) {
		drop(cn, 0);
		return connect_stopped(cn);
	}
	st = connect_db(cn, host, port, deadline, cn->cfg->ep.db);
	if (st != 0 && sig_stopping())
		return connect_stopped(cn);

	/*
	 * Closed on SELECT, the first command: a proxy without databases
	 * (twemproxy), or a restart. A connection without it tells them
	 * apart: one whose login is answered refused SELECT.
	 */
	if (st == 0 || !failure_closed_on(&cn->fail, CMD_SELECT))
		return st;
	closed = cn->fail;
	if (connect_db(cn, host, port, deadline, 0) == 0)
		(void)failure_refused(&closed, CMD_SELECT);
	cn->fail = closed;
	conn_close(cn);
	return cn->fail.status;
}

/* A connect conn_connect_start started, made (or failed): the login
 * written, its answer owed. */
static int
login_started(struct conn *cn)
{
	int64_t by = cn->connecting_by;
	int st;

	if ((st = connect_socket(cn, NULL, 0, &by)) != 0)
		return st;
	return login_send(cn, by) != 0 ? login_failed(cn, by) : 0;
}

void
conn_connect_started(struct conn *const *cn, int n, int *st)
{
	struct pollfd *p = xcalloc((size_t)n + 1, sizeof(*p));
	int64_t first;
	int i, j, k, left;

	for (i = 0; i < n; i++)
		st[i] = -1;
	/* Each login is written as soon as its connect is made (one stalled
	 * connect must not eat the others' time), and the answers are read
	 * after: the waits overlap, by the deadline the connects were
	 * started with. */
	for (left = n; left > 0; ) {
		first = INT64_MAX;
		for (i = k = 0; i < n; i++) {
			if (st[i] >= 0)
				continue;
			p[k].fd = cn[i]->connecting;
			p[k++].events = POLLOUT;
			if (cn[i]->connecting_by < first)
				first = cn[i]->connecting_by;
		}
		k = sig_poll(p, (nfds_t)k, deadline_poll_ms(first));
		if (k < 0 && errno == EINTR)
			continue;
		/* A stop signal: each connect then fails at once. */
		for (i = j = 0; i < n; i++)
			if (st[i] < 0 && (k < 0 || p[j++].revents != 0 ||
			    mono_ms() >= cn[i]->connecting_by)) {
				st[i] = login_started(cn[i]);
				left--;
			}
	}
	for (i = 0; i < n; i++) {
		if (st[i] == 0 && (st[i] = login_answer(cn[i],
		    cn[i]->connecting_by)) != 0)
			st[i] = login_failed(cn[i], cn[i]->connecting_by);
		cn[i]->login_ms = 0;
		if (st[i] != 0 && sig_stopping())
			st[i] = connect_stopped(cn[i]);
	}
	free(p);
}
