// SPDX-License-Identifier: MIT
/*
 * The supervisor. The main thread sleeps in one poll() on the signalfd and
 * the renewal thread's event pipe (until that thread starts, the idle
 * connection), with a timeout that is the next lease decision. The lease
 * rule (contract, "Guarantees"): Redis may expire the lock at last_ok +
 * lease, where last_ok is when our last successful extend was *sent*;
 * minus a drift margin that is our deadline. --on-lost term
 * sends SIGTERM early enough that the SIGKILL --kill-after later still
 * lands before it; if Redis says the lock is not ours, the action is now.
 */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exitcode.h"
#include "lease.h"
#include "renew.h"
#include "sig.h"
#include "util.h"

enum lost_how { HELD, LOST_NOT_OURS, LOST_UNRENEWED };

/* After a failed poll() (ENOMEM), the next try: short against any lease. */
#define POLL_RETRY_MS 10

struct sup {
	const struct rlock_opts *o;
	struct lock_ctx *ctx;
	struct lock *l;
	int sigfd;
	pid_t child;
	int exec_fd;			/* exec's outcome not read yet; else -1 */
	int exec_errno;			/* exec failed with this; 0 it ran */
	int wstatus;
	struct renewer rw;
	enum lost_how lost;
	int64_t term_at;		/* when SIGTERM went out; 0 not yet */
	int kill_sent;
	char key[96];			/* printable, for messages */
};

static int64_t
deadline_of(const struct sup *s)
{
	return lease_deadline(atomic_load(&s->rw.last_ok), s->ctx->lease_ms);
}

static int64_t
grace_ms(const struct sup *s)
{
	return lease_kill_grace_ms(s->ctx->lease_ms, s->o->kill_after_ms);
}

static int
lost_signal(enum on_lost how)
{
	return how == LOST_KILL ? SIGKILL : how == LOST_TERM ? SIGTERM : 0;
}

static void
child_exec(const struct rlock_opts *o, int errfd, pid_t parent)
{
	int sig = lost_signal(o->on_lost), e;

	sig_restore();
	/* If rlock dies, even by SIGKILL, COMMAND must not run on unguarded
	 * once the lease lapses: the kernel sends it the --on-lost signal. */
	if (sig && (prctl(PR_SET_PDEATHSIG, sig) < 0 || getppid() != parent))
		raise(sig);
	if (o->shell_cmd)
		execl("/bin/sh", "sh", "-c", o->shell_cmd, (char *)NULL);
	else
		execvp(o->cmd[0], o->cmd);
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(e == ENOENT ? RL_EXIT_EXEC_NOENT : RL_EXIT_EXEC_NOEXEC);
}

static int
exec_failed(const struct rlock_opts *o, int e)
{
	msg_err("cannot run '%s': %s", o->shell_cmd ? "/bin/sh" : o->cmd[0],
	    strerror(e));
	return e == ENOENT ? RL_EXIT_EXEC_NOENT : RL_EXIT_EXEC_NOEXEC;
}

int
sup_exec_here(const struct rlock_opts *o)
{
	sig_restore();
	if (o->shell_cmd)
		execl("/bin/sh", "sh", "-c", o->shell_cmd, (char *)NULL);
	else
		execvp(o->cmd[0], o->cmd);
	return exec_failed(o, errno);
}

static void
export_env(const struct lock_ctx *ctx, const char *key, int64_t fence)
{
	char f[24];

	snprintf(f, sizeof(f), "%lld", (long long)fence);
	setenv("RLOCK_KEY", key, 1);
	setenv("RLOCK_TOKEN", ctx->token, 1);
	setenv("RLOCK_FENCE", f, 1);
}

/*
 * Start COMMAND; returns 0, or an exit status when it could not be forked.
 * vfork: the child borrows our memory until its exec, so neither side
 * takes the copy-on-write faults a fork costs for every page it writes
 * (43 of an uncontended run's ~190 page faults here). The child only
 * resets signals, sets its death signal and execs, on its own stack
 * frames below ours; it writes nothing of ours but errno. We are
 * suspended until its exec: the renewal thread, started before, keeps the
 * lease meanwhile, should the exec hang (a binary on a stalled network
 * file system). Whether the exec worked is read later (exec_settle):
 * waiting for it here would wake us just as COMMAND starts, to compete
 * with it for a CPU.
 */
static int
spawn(struct sup *s)
{
	int p[2];
	pid_t parent = getpid(), child;

	/* The OS refusing us a pipe or a process is not COMMAND's fault:
	 * 71, not 126 (not executable). */
	if (pipe2(p, O_CLOEXEC) < 0) {
		msg_err("cannot run COMMAND: pipe: %s", strerror(errno));
		return RL_EXIT_OSERR;
	}
	if ((child = vfork()) == 0) {
		close(p[0]);
		child_exec(s->o, p[1], parent);
	}
	if (child < 0) {
		msg_err("cannot run COMMAND: fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return RL_EXIT_OSERR;
	}
	s->child = child;
	close(p[1]);
	s->exec_fd = p[0];
	return 0;
}

/*
 * Learn whether COMMAND's exec worked, waiting for it if it is still on
 * its way: the pipe closes on a successful exec (0 bytes), or carries the
 * errno of a failed one. Returns that errno, or 0.
 */
static int
exec_settle(struct sup *s)
{
	ssize_t n;
	int e;

	if (s->exec_fd < 0)
		return s->exec_errno;
	do
		n = read(s->exec_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(s->exec_fd);
	s->exec_fd = -1;
	if (n == (ssize_t)sizeof(e))
		s->exec_errno = e;
	return s->exec_errno;
}

static void
send_child(struct sup *s, int sig)
{
	/* A signal for COMMAND must not reach rlock's code in the child
	 * between fork and exec. */
	if (exec_settle(s) != 0)
		return;
	if (kill(s->child, sig) < 0 && errno != ESRCH)
		msg_warn("cannot signal COMMAND (pid %ld): %s",
		    (long)s->child, strerror(errno));
}

static void
declare_lost(struct sup *s, enum lost_how how)
{
	int sig = lost_signal(s->o->on_lost);
	const char *why = how == LOST_NOT_OURS ?
	    "Redis says another client holds or removed it" :
	    "the lease could not be extended in time (Redis unreachable)";

	s->lost = how;
	if (sig == 0) {
		msg_err("lost the lock '%s': %s; --on-lost ignore: COMMAND "
		    "keeps running unguarded", s->key, why);
		return;
	}
	msg_err("lost the lock '%s': %s; sending %s to COMMAND (pid %ld)",
	    s->key, why, sig == SIGKILL ? "SIGKILL" : "SIGTERM",
	    (long)s->child);
	send_child(s, sig);
	if (sig == SIGKILL)
		s->kill_sent = 1;
	else
		s->term_at = mono_ms();
}

/*
 * Take the lease decisions due now; return ms until the next one, or -1
 * when none is pending.
 */
static int64_t
check_lease(struct sup *s)
{
	int64_t now = mono_ms(), dl = deadline_of(s), at;

	if (s->lost == HELD && atomic_load(&s->rw.not_ours))
		declare_lost(s, LOST_NOT_OURS);
	if (s->lost == HELD) {
		switch (s->o->on_lost) {
		case LOST_TERM:
			at = dl - grace_ms(s);
			break;
		case LOST_KILL:
			at = dl;
			break;
		default:
			at = dl + lease_drift_ms(s->ctx->lease_ms);
			break;
		}
		if (now < at)
			return at - now;
		declare_lost(s, LOST_UNRENEWED);
	}
	if (s->term_at == 0 || s->kill_sent)
		return -1;
	/* A lease that is renewed again moves the SIGKILL with it; one that
	 * is gone gives the full grace from the SIGTERM. But a SIGKILL timed
	 * for the deadline stays there when Redis then says the lock is
	 * gone: that news makes it more urgent, never less. */
	at = s->lost == LOST_NOT_OURS ? s->term_at + s->o->kill_after_ms : dl;
	if (s->lost == LOST_UNRENEWED && atomic_load(&s->rw.not_ours) &&
	    s->term_at + s->o->kill_after_ms < at)
		at = s->term_at + s->o->kill_after_ms;
	if (now < at)
		return at - now;
	msg_err("COMMAND (pid %ld) still runs; sending SIGKILL",
	    (long)s->child);
	send_child(s, SIGKILL);
	s->kill_sent = 1;
	return -1;
}

/* Handle one signal; returns 1 when COMMAND has ended. */
static int
on_signal(struct sup *s, const struct signalfd_siginfo *si)
{
	pid_t r;

	if (si->ssi_signo == SIGCHLD) {
		r = waitpid(s->child, &s->wstatus, WNOHANG);
		return r == s->child;
	}
	/* A terminal's ^C already reached COMMAND in our process group;
	 * forwarding it would deliver it twice. */
	if (si->ssi_code == SI_KERNEL && getpgid(s->child) == getpgrp())
		return 0;
	msg_verbose("forwarding signal %d to COMMAND", (int)si->ssi_signo);
	send_child(s, (int)si->ssi_signo);
	return 0;
}

/*
 * One poll() on the signalfd and the renewal thread's event pipe, with the
 * next lease decision as its timeout.
 */
static void
supervise(struct sup *s)
{
	struct signalfd_siginfo si;
	struct pollfd p[2];
	int64_t next;
	int poll_failed = 0;
	char drain[64];

	p[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = s->rw.running ?
	    renew_event_fd(&s->rw) : -1, .events = POLLIN };
	for (;;) {
		next = check_lease(s);
		if (poll(p, 2, next < 0 || next > 60000 ? 60000 :
		    (int)next) < 0 && errno != EINTR) {
			/* ENOMEM: the kernel could not track the fds this
			 * once. Leaving the loop would drop the deadline and
			 * the forwarding; try again shortly instead. */
			if (!poll_failed++)
				msg_warn("poll: %s; retrying", strerror(errno));
			nap_ms(POLL_RETRY_MS);
			continue;
		}
		if (p[1].revents & POLLIN)
			while (read(p[1].fd, drain, sizeof(drain)) > 0)
				;
		while (sig_take(s->sigfd, &si) != 0)
			if (on_signal(s, &si))
				return;
	}
}

static void
release(struct sup *s)
{
	int64_t budget = lock_connect_timeout(s->l), start = mono_ms();
	int64_t left;
	int r;

	lock_set_timeouts(s->l, budget, budget);
	if (s->lost == LOST_NOT_OURS || atomic_load(&s->rw.not_ours))
		return;
	r = lock_is_open(s->l) ? lock_release(s->l, s->ctx) : -1;
	/* A fresh connection is worth a try after a dropped one, but a
	 * silent server gets one --connect-timeout in all, not two. */
	left = budget - (mono_ms() - start);
	if (r < 0 && left > 0) {
		lock_set_timeouts(s->l, left, left);
		if (lock_reopen(s->l) == 0)
			r = lock_release(s->l, s->ctx);
	}
	if (r == 1)
		trace_event("release");
	if (r < 0) {
		msg_warn("could not release '%s': %s; it expires by itself "
		    "within the lease", s->key, lock_failure(s->l)->why);
	} else if (r == 0 && s->lost == HELD) {
		/* Taken or removed between our last extend and COMMAND's end:
		 * the lease was lost while COMMAND ran all the same (70). */
		s->lost = LOST_NOT_OURS;
		msg_err("lost the lock '%s': Redis says another client holds "
		    "or removed it; found at release, after COMMAND ended",
		    s->key);
	} else {
		msg_verbose("released '%s'", s->key);
	}
}

/*
 * Out of memory while holding (in any thread): COMMAND must not outlive
 * its guard, nor the lock outlive COMMAND. Unless --on-lost ignore,
 * COMMAND is killed and reaped, then the lock released on a connection
 * of our own (oom() freed a reserve for this), then rlock exits 71.
 */
static struct sup *oom_sup;

static void
oom_release(void)
{
	struct sup *s = oom_sup;
	struct lock *l;

	if (s == NULL || lost_signal(s->o->on_lost) == 0)
		return;
	if (s->child > 0) {
		kill(s->child, SIGKILL);
		while (waitpid(s->child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	l = lock_new_like(s->l);
	if (lock_open(l) == 0 && lock_release(l, s->ctx) == 1)
		msg_err("released '%s' after killing COMMAND", s->key);
}

static int
exit_status(const struct sup *s)
{
	if (s->lost != HELD)
		return RL_EXIT_LEASE_LOST;
	if (WIFEXITED(s->wstatus))
		return WEXITSTATUS(s->wstatus);
	if (WIFSIGNALED(s->wstatus))
		return RL_EXIT_SIGNAL_BASE + WTERMSIG(s->wstatus);
	return RL_EXIT_LEASE_LOST;
}

/*
 * rlock may have been held up between the grant and here (stopped, swapped
 * out, an acquire that CLIENT PAUSE or a stalled server kept waiting):
 * `granted` counts from before the acquire was sent, so an old grant can be
 * a lease that is already gone, and someone else may hold KEY now. COMMAND
 * must never start on such a lease, nor be killed at once over a lease that
 * is in fact fresh. So a grant older than one renewal interval is confirmed
 * with an extend first. Returns 0 to start COMMAND (*granted updated), or
 * the exit status when it must not start.
 */
static int
confirm_grant(struct sup *s, int64_t *granted)
{
	int64_t lease = s->ctx->lease_ms, t0, held, t;
	int r = -1;

	if ((held = mono_ms() - *granted) < lease_renew_interval_ms(lease))
		return 0;
	/* The same bound per try as the renewal thread's. */
	t = lease_try_timeout_ms(lease, lock_connect_timeout(s->l));
	lock_set_timeouts(s->l, t, t);
	t0 = mono_ms();
	if (lock_is_open(s->l) || lock_open(s->l) == 0)
		r = lock_extend(s->l, s->ctx);
	if (r == 1) {
		*granted = t0;
		return 0;
	}
	if (r < 0 && mono_ms() < lease_deadline(*granted, lease))
		return 0;	/* still ours for a while: the supervisor acts */
	msg_err("lost the lock '%s' before COMMAND started (%lldms after "
	    "asking for it): %s; COMMAND not run", s->key, (long long)held,
	    r == 0 ? "Redis says another client holds or removed it" :
	    "the lease could not be extended in time (Redis unreachable)");
	s->lost = r == 0 ? LOST_NOT_OURS : LOST_UNRENEWED;
	if (r < 0)
		release(s);	/* compare-and-delete: harmless if gone */
	return RL_EXIT_LEASE_LOST;
}

int
sup_run(const struct rlock_opts *o, struct lock_ctx *ctx, struct lock *l,
    int sigfd, const struct wait_result *res)
{
	struct sup s = { .o = o, .ctx = ctx, .l = l, .sigfd = sigfd,
	    .exec_fd = -1 };
	int64_t granted = res->granted_at;
	int st, e = 0;

	printable(o->key, strlen(o->key), s.key, sizeof(s.key));
	if ((st = confirm_grant(&s, &granted)) != 0)
		return st;
	export_env(ctx, o->key, res->fence);
	renew_init(&s.rw, l, ctx, granted);
	oom_sup = &s;
	oom_on(oom_release);
	/* Before COMMAND: spawn() suspends us until its exec. Without
	 * renewal the lease simply runs out: the deadline logic still stops
	 * COMMAND in time. */
	if (renew_start(&s.rw) < 0)
		msg_warn("cannot start the renewal thread: %s",
		    strerror(errno));
	if ((st = spawn(&s)) == 0) {
		msg_verbose("running COMMAND (pid %ld) with fence %lld",
		    (long)s.child, (long long)res->fence);
		supervise(&s);
		if ((e = exec_settle(&s)) != 0)
			st = exec_failed(o, e);
	}
	/* Release first: the next holder need not wait for our thread to
	 * end. It can no longer extend (nor touch the connection) from here on. */
	renew_take_conn(&s.rw);
	release(&s);
	renew_stop(&s.rw);
	oom_on(NULL);
	oom_sup = NULL;
	return st != 0 || e != 0 ? st : exit_status(&s);
}
