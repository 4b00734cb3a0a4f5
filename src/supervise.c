// SPDX-License-Identifier: MIT
/*
 * The supervisor. The main thread sleeps in one poll() on the signalfd
 * and the renewal thread's event pipe (when that thread could be
 * started), with a timeout that is the next lease decision.
 * The lease rule (contract, "Guarantees"): Redis may expire the lock at
 * last_ok + lease, where last_ok is when our last successful extend was
 * *sent*; minus a drift margin that is our deadline. --on-lost term sends
 * SIGTERM early enough that the SIGKILL --kill-after later still lands
 * before it; if Redis says the lock is not ours, the action is now.
 * --max-hold takes the same SIGTERM-then-SIGKILL path on its own timer,
 * and the renewal thread stops extending once that SIGKILL is due. At the
 * end, one release records the run (and applies --min-hold), riding out
 * Redis's weather until the lease's deadline; a run whose lease was lost
 * is recorded apart.
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
#include "watch.h"

enum lost_how { HELD, LOST_NOT_OURS, LOST_UNRENEWED };

/* After a failed poll() (ENOMEM), the next try: short against any lease. */
#define POLL_RETRY_MS 10

struct sup {
	const struct rlock_opts *o;
	struct lock_ctx *ctx;
	struct lock *l;
	int sigfd;
	pid_t child;
	struct sup_owner *owner;	/* a section's, in COMMAND's place */
	int own_pgrp;			/* COMMAND leads a process group */
	struct watcher watch;		/* stops COMMAND's tree if we die */
	int exec_fd;			/* exec's outcome still unread, or -1 */
	int exec_errno;			/* exec failed with this; 0 it ran */
	int wstatus;
	struct renewer *rw;		/* the sup_ahead's, maybe parked */
	enum lost_how lost;
	int64_t term_at;		/* when SIGTERM went out; 0 not yet */
	int kill_sent;
	int64_t stall_ms, stall_end;	/* rlock did not run; see stalled() */
	const struct wait_result *res;	/* heard_at: the grant, to wait_lock */
	int max_fired;
	struct run_end end;		/* what the last release records */
	char key[96];			/* printable, for messages */
};

static int64_t
deadline_of(const struct sup *s)
{
	return lease_held_deadline(atomic_load(&s->rw->last_ok),
	    s->ctx->lease_ms, s->rw->hold_until);
}

int64_t
sup_hold_bound(const struct rlock_opts *o, int64_t lease_ms)
{
	if (o->max_hold_ms == 0)
		return 0;
	return o->max_hold_ms + o->kill_after_ms +
	    2 * lease_drift_ms(lease_ms) + lease_retry_ms(lease_ms);
}

static int
lost_signal(enum on_lost how)
{
	return how == LOST_KILL ? SIGKILL : how == LOST_TERM ? SIGTERM : 0;
}

static void
child_exec(const struct sup *s, int errfd, pid_t parent)
{
	const struct rlock_opts *o = s->o;
	int sig = lost_signal(o->on_lost), e;

	/* Before the signals are unblocked: see spawn(). */
	if (s->own_pgrp)
		(void)setpgid(0, 0);
	/* If rlock dies, even by SIGKILL, COMMAND must not run on unguarded
	 * once the lease lapses: the watcher sends the --on-lost signal to
	 * COMMAND and all it started. Without one, the kernel sends it to
	 * COMMAND alone. */
	if (sig && watch_child(&s->watch) < 0 &&
	    (prctl(PR_SET_PDEATHSIG, sig) < 0 || getppid() != parent))
		raise(sig);
	sig_restore();
	if (o->shell_cmd)
		execl("/bin/sh", "sh", "-c", o->shell_cmd, (char *)NULL);
	else
		execvp(o->cmd[0], o->cmd);
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(e == ENOENT ? RL_EXIT_EXEC_NOENT : RL_EXIT_EXEC_NOEXEC);
}

/* Start the watcher unless --on-lost ignore (nothing to send), with
 * what it needs to time a SIGKILL as we would: after the grant (a run
 * that does not get the lock forks nothing), before COMMAND. */
static void
watch(struct sup *s)
{
	struct watch_lease wl = { .sig = lost_signal(s->o->on_lost),
	    .lease_ms = s->ctx->lease_ms, .hold_until = s->rw->hold_until,
	    .grace_ms = lease_kill_grace_ms(s->ctx->lease_ms,
	    s->o->kill_after_ms), .last_ok = atomic_load(&s->rw->last_ok) };

	if (wl.sig == 0)
		return;
	if (watch_start(&s->watch, &wl) < 0)
		msg_verbose("cannot start the watcher: %s; should rlock die, "
		    "only COMMAND gets the --on-lost signal", strerror(errno));
	/* Read by the renewal thread once renew_start arms it. */
	s->rw->last_ok_too = watch_last_ok(&s->watch);
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

/*
 * Start COMMAND; returns 0, or an exit status when it could not be forked.
 * vfork: the child borrows our memory until its exec, so neither side
 * takes the copy-on-write faults a fork costs for every page it writes,
 * a large part of a short run's page faults. The child only
 * resets signals, sets its death signal and execs, on its own stack
 * frames below ours; it writes nothing of ours but errno. We are
 * suspended until its exec: the renewal thread, started before, keeps the
 * lease meanwhile, should the exec hang (a binary on a stalled network
 * file system). Whether the exec worked is read later (exec_settle):
 * waiting for it here would wake us just as COMMAND starts, to compete
 * with it for a CPU.
 *
 * Signals sent to our whole process group (kill -- -PGID, a supervisor
 * stopping its job) must reach COMMAND once, not once directly and once
 * more through us. So unless we are the foreground job of a terminal,
 * COMMAND gets a process group of its own (the child sets it before its
 * exec, so before we run again), which such signals do not reach, and we
 * forward what we get to that whole group (COMMAND and its children, as
 * the group signal would have reached them). In a terminal's foreground,
 * COMMAND stays in our group, so it can use the terminal; there ^C
 * reaches it directly, and on_signal does not forward a second one.
 */
static int
spawn(struct sup *s, struct sup_ahead *a)
{
	pid_t parent = getpid(), child;

	s->own_pgrp = !sig_foreground();
	if ((child = vfork()) == 0) {
		close(a->exec_pipe[0]);
		child_exec(s, a->exec_pipe[1], parent);
	}
	close(a->exec_pipe[1]);
	a->piped = 0;
	if (child < 0) {
		msg_err("cannot run COMMAND: fork: %s", strerror(errno));
		close(a->exec_pipe[0]);
		watch_stop(&s->watch);
		return RL_EXIT_OSERR;
	}
	s->child = child;
	s->exec_fd = a->exec_pipe[0];
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
	/* No COMMAND: kill(0) and kill(-0) would signal our own group, and
	 * on_signal would forward what comes back, for ever. */
	if (s->child <= 0)
		return;
	if (s->owner != NULL) {
		watch_tree(s->child, sig);
		return;
	}
	/* A signal for COMMAND must not reach rlock's code in the child
	 * between fork and exec. */
	if (exec_settle(s) != 0)
		return;
	/* COMMAND may have moved to a group of its own making. */
	if (s->own_pgrp && kill(-s->child, sig) == 0)
		return;
	if (kill(s->child, sig) < 0 && errno != ESRCH)
		msg_warn("cannot signal COMMAND (pid %ld): %s",
		    (long)s->child, strerror(errno));
}

/*
 * A poll that returns far later than it was asked to means that rlock
 * itself did not run meanwhile (SIGSTOP, a suspended or overloaded
 * machine): its renewals were not sent, with Redis reachable all along.
 * One that kept us from more than a renewal interval is remembered, for
 * the message if the lease is lost before an extend gets through again.
 */
static void
stalled(struct sup *s, int64_t asked_ms, int64_t took_ms)
{
	int64_t late = took_ms - asked_ms;

	if (late < lease_renew_interval_ms(s->ctx->lease_ms) || late < 100)
		return;
	if (late > s->stall_ms || s->stall_end < atomic_load(&s->rw->last_ok))
		s->stall_ms = late;
	s->stall_end = mono_ms();
}

/*
 * Why no extend got through in time, from the last one's failure f: a
 * server that answered (a refused password or permission, a busy or
 * read-only server) is not "unreachable", and its cure is not the
 * network's.
 */
static const char *
unrenewed_why(const struct failure *f, char *buf, size_t len)
{
	const char *said = f->said[0] != '\0' ? f->said : f->why;

	switch (f->kind) {
	case FAIL_NONE:
	case FAIL_UNREACHABLE:
	case FAIL_DROPPED:
	case FAIL_TIMEOUT:
		return "the lease could not be extended in time "
		    "(Redis unreachable)";
	case FAIL_CREDENTIALS:
		snprintf(buf, len, "the lease could not be extended in time: "
		    "Redis refused the credentials (%s)", said);
		break;
	default:
		snprintf(buf, len, "the lease could not be extended in time: "
		    "%s", f->why);
		break;
	}
	return buf;
}

static void
declare_lost(struct sup *s, enum lost_how how)
{
	int sig = lost_signal(s->o->on_lost);
	const char *why = "Redis says another client holds or removed it";
	char stop[200], d[32], words[400];
	struct failure f;

	if (how == LOST_UNRENEWED) {
		renew_failure(s->rw, &f);
		why = unrenewed_why(&f, words, sizeof(words));
	}
	/* Not Redis's fault: say what happened. */
	if (s->stall_ms > 0 && s->stall_end >= atomic_load(&s->rw->last_ok)) {
		dur_format(s->stall_ms, d, sizeof(d));
		snprintf(stop, sizeof(stop), "rlock itself did not run for %s "
		    "(stopped? a suspended or overloaded machine?), %s", d,
		    how == LOST_NOT_OURS ? "and the lease ran out meanwhile "
		    "(Redis says another client holds or removed it)" :
		    "so the lease could not be extended in time");
		why = stop;
	}
	s->lost = how;
	if (sig == SIGTERM && s->term_at != 0) {
		/* --max-hold's SIGTERM is out: its SIGKILL follows. */
		msg_err("lost the lock '%s': %s; COMMAND (pid %ld) already "
		    "got SIGTERM (--max-hold)", s->key, why, (long)s->child);
		return;
	}
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

/* When a lease that is still ours counts as lost (--on-lost's timing). */
static int64_t
lost_at(const struct sup *s, int64_t dl)
{
	if (s->o->on_lost == LOST_IGNORE)
		return dl + lease_drift_ms(s->ctx->lease_ms);
	/* --max-hold's SIGTERM is out: only the deadline is left. */
	if (s->o->on_lost == LOST_KILL || s->term_at != 0)
		return dl;
	return dl - lease_kill_grace_ms(s->ctx->lease_ms, s->o->kill_after_ms);
}

/* When the SIGKILL after a SIGTERM is due. */
static int64_t
kill_at(const struct sup *s, int64_t dl)
{
	int64_t after = s->term_at + s->o->kill_after_ms;
	int64_t at = s->lost == LOST_UNRENEWED ? dl : after;

	/* A lease that is renewed again moves the SIGKILL with it; one that
	 * is gone gives the full grace from the SIGTERM. But a SIGKILL timed
	 * for the deadline stays there when Redis then says the lock is
	 * gone: that news makes it more urgent, never less; nor does a lost
	 * lease delay --max-hold's SIGKILL. */
	if ((s->max_fired || atomic_load(&s->rw->not_ours)) && after < at)
		at = after;
	return at;
}

static int64_t
sooner(int64_t a, int64_t b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

/*
 * Take the decisions due now (--max-hold's SIGTERM, then the lease's);
 * return ms until the next one, or -1 when none is pending.
 */
static int64_t
check_lease(struct sup *s)
{
	int64_t now = mono_ms(), dl = deadline_of(s), at, next = -1;
	char d[32];

	if (s->o->max_hold_ms > 0 && !s->max_fired && s->lost == HELD) {
		if (now < (at = s->res->heard_at + s->o->max_hold_ms)) {
			next = at - now;
		} else {
			s->max_fired = 1;
			dur_format(s->o->max_hold_ms, d, sizeof(d));
			msg_err("'%s' has been held for --max-hold %s; sending "
			    "SIGTERM to COMMAND (pid %ld)", s->key, d,
			    (long)s->child);
			send_child(s, SIGTERM);
			s->term_at = now;
		}
	}
	if (s->lost == HELD && atomic_load(&s->rw->not_ours))
		declare_lost(s, LOST_NOT_OURS);
	if (s->lost == HELD) {
		if (now < (at = lost_at(s, dl)))
			next = sooner(next, at - now);
		else
			declare_lost(s, LOST_UNRENEWED);
	}
	if (s->term_at == 0 || s->kill_sent)
		return next;
	if (now < (at = kill_at(s, dl)))
		return sooner(next, at - now);
	msg_err("COMMAND (pid %ld) still runs; sending SIGKILL",
	    (long)s->child);
	send_child(s, SIGKILL);
	s->kill_sent = 1;
	return next;
}

/* Handle one signal; returns 1 when COMMAND has ended. */
static int
on_signal(struct sup *s, const struct signalfd_siginfo *si)
{
	siginfo_t ci;

	if (si->ssi_signo == SIGCHLD) {
		/* The watcher must never take another process for COMMAND:
		 * it stands down before COMMAND's pid is free again. */
		ci.si_pid = 0;
		if (waitid(P_PID, (id_t)s->child, &ci,
		    WEXITED | WNOHANG | WNOWAIT) == 0 && ci.si_pid == s->child)
			watch_stop(&s->watch);
		return waitpid(s->child, &s->wstatus, WNOHANG) == s->child;
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
 * One poll() on the signalfd and the renewal thread's event pipe (and a
 * section's owner), with the next lease decision as its timeout.
 */
static void
supervise(struct sup *s)
{
	struct signalfd_siginfo si;
	int fds[4] = { s->sigfd, s->rw->running ? s->rw->event_pipe[0] : -1,
	    s->owner ? s->owner->fds[0] : -1,
	    s->owner ? s->owner->fds[1] : -1 };
	struct pollfd p[4];
	int64_t next, t0;
	int poll_failed = 0, tmo, i;
	char drain[64];

	for (i = 0; i < 4; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	for (;;) {
		next = sooner(check_lease(s), renew_wake_due(s->rw));
		tmo = next < 0 ? DEADLINE_POLL_MAX_MS :
		    deadline_poll_ms(mono_ms() + next);
		if (s->owner != NULL && tmo > 1000)
			tmo = 1000;
		t0 = mono_ms();
		if (poll(p, 4, tmo) < 0 && errno != EINTR) {
			/* ENOMEM: the kernel could not track the fds this
			 * once. Leaving the loop would drop the deadline and
			 * the forwarding; try again shortly instead. */
			if (!poll_failed++)
				msg_warn("poll: %s; retrying", strerror(errno));
			nap_ms(POLL_RETRY_MS);
			continue;
		}
		stalled(s, tmo, mono_ms() - t0);
		if (p[1].revents & POLLIN)
			while (read(p[1].fd, drain, sizeof(drain)) > 0)
				;
		while (sig_take(s->sigfd, &si) != 0)
			if (on_signal(s, &si))
				return;
		if (s->owner != NULL && s->owner->ended(s->owner))
			return;
	}
}

/*
 * The last try of a release that meets weather comes at the lease's
 * deadline, and gets this long for its answer at least: late by that
 * much, a compare-and-delete is still harmless, and it may yet spare
 * the waiters the last few ms of the lease.
 */
#define RELEASE_LAST_TRY_MS 50

/*
 * Try the release again while it meets weather (failure_retry: a reset
 * or refused connection, a restart, BUSY, LOADING, a failover), as a
 * waiter does: at most RETRY_BACKOFF_MAX_MS apart, until it is done or
 * the lease's deadline has come, after which Redis frees KEY anyway (and
 * a compare-and-delete could do no more). Each try is bounded as an
 * extend is, so a silent server cannot keep us much past the deadline.
 * Returns the last try's outcome, as lock_release; *said: the retries
 * were announced.
 */
static int
release_tries(struct sup *s, int *said)
{
	int64_t dl = deadline_of(s), per_try, now, tmo;
	enum fail_kind kind;
	int r, backoffs = 0, tries, unsure = 0;
	char d[32];

	per_try = lease_try_timeout_ms(s->ctx->lease_ms,
	    lock_connect_timeout(s->l));
	/* Each try's connect and answer within tmo ms. */
	for (tries = 0, tmo = per_try;; tries++) {
		lock_set_timeouts(s->l, tmo, tmo);
		r = lock_is_open(s->l) || lock_reopen(s->l) == 0 ?
		    lock_release(s->l, s->ctx) : -1;
		if (r >= 0 || !failure_retry(lock_failure(s->l)))
			break;
		kind = lock_failure(s->l)->kind;
		/* Its request may have reached Redis: a "not ours" later
		 * may well be its own doing. */
		unsure |= kind == FAIL_DROPPED || kind == FAIL_TIMEOUT;
		now = mono_ms();
		tmo = per_try;
		/* The server closed the connection (idle, or restarted): a
		 * fresh one is worth a try at once, as the first try's due. */
		if (tries > 0 || kind != FAIL_DROPPED) {
			if (now >= dl)
				break;
			if (!(*said)++) {
				dur_format(dl - now, d, sizeof(d));
				msg_warn("cannot release '%s' yet: %s; trying "
				    "again at most %dms apart until it is "
				    "released or its lease ends (in %s)",
				    s->key, lock_failure(s->l)->why,
				    RETRY_BACKOFF_MAX_MS, d);
			}
			nap_ms(lease_clamp(retry_backoff_ms(backoffs++), 0,
			    dl - now));
			tmo = lease_clamp(dl - mono_ms(), RELEASE_LAST_TRY_MS,
			    per_try);
		}
		/* An answer (BUSY, LOADING) came on a connection that
		 * works; any other failure starts afresh, where the
		 * sentinels say the master is now. */
		if (kind != FAIL_BUSY)
			lock_close(s->l);
		(void)lock_recheck(s->l);
	}
	if (r == 0 && unsure) {
		msg_verbose("'%s' is not ours any more: taken as released by "
		    "a try whose answer was lost", s->key);
		r = 1;
	}
	return r;
}

/*
 * Release, recording the run as s->end says (and keeping KEY until
 * --min-hold's end), riding out weather until the lease's deadline
 * (release_tries). Returns 1 released, 0 found not ours, -1 failed, -2
 * not tried: the lock was known lost. Leaves the timeouts at the user's
 * --connect-timeout.
 */
static int
release(struct sup *s)
{
	int64_t budget = lock_connect_timeout(s->l), start = mono_ms();
	int r, said = 0;
	char d[32];

	lock_set_timeouts(s->l, budget, budget);
	if (s->lost == LOST_NOT_OURS || atomic_load(&s->rw->not_ours))
		return -2;
	s->ctx->end = &s->end;
	r = release_tries(s, &said);
	s->ctx->end = NULL;
	lock_set_timeouts(s->l, budget, budget);
	if (r == 1)
		trace_event("release");
	dur_format(mono_ms() - start, d, sizeof(d));
	if (r == 1 && said) {
		msg_notice("released '%s' after %s of trying", s->key, d);
	} else if (r < 0 && said && failure_retry(lock_failure(s->l))) {
		msg_warn("could not release '%s' in %s of trying: %s; its "
		    "lease ends now, and with it the lock", s->key, d,
		    lock_failure(s->l)->why);
	} else if (r < 0) {
		msg_warn("could not release '%s': %s; it expires by itself "
		    "within the lease", s->key, lock_failure(s->l)->why);
	} else if (r == 0 && s->lost == HELD) {
		/* Taken or removed between our last extend and COMMAND's end:
		 * the lease was lost while COMMAND ran all the same (70). */
		s->lost = LOST_NOT_OURS;
		msg_err("lost the lock '%s': Redis says another client holds "
		    "or removed it; found at release, after COMMAND ended",
		    s->key);
	}
	return r;
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
		watch_stop(&s->watch);
		while (waitpid(s->child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	l = lock_new_like(s->l);
	if (lock_open(l) == 0 && lock_release(l, s->ctx) == 1)
		msg_err("released '%s' after killing COMMAND", s->key);
	/* Stood down above, it has ended meanwhile: no zombie either. */
	watch_end(&s->watch);
}

static int
exit_status(const struct sup *s)
{
	if (s->lost != HELD)
		return RL_EXIT_LEASE_LOST;
	if (s->max_fired)
		return RL_EXIT_MAX_HOLD;
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
	char words[400];
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
	/* Cut short by a stop signal: the caller gives the grant back. */
	if (r < 0 && sig_stopping())
		return 0;
	if (r < 0 && mono_ms() < lease_deadline(*granted, lease))
		return 0;	/* ours for a while yet: the supervisor acts */
	msg_err("lost the lock '%s' before COMMAND started (%lldms after "
	    "asking for it): %s; COMMAND not run", s->key, (long long)held,
	    r == 0 ? "Redis says another client holds or removed it" :
	    unrenewed_why(lock_failure(s->l), words, sizeof(words)));
	/* The caller releases (compare-and-delete: harmless if gone). */
	s->lost = r == 0 ? LOST_NOT_OURS : LOST_UNRENEWED;
	return RL_EXIT_LEASE_LOST;
}

/*
 * The end of a run that held KEY, however it went: release (which records
 * the run in P{KEY}:last and applies --min-hold), or, when the lease was
 * lost, record the run apart. st is rlock's status as it stands; returns
 * the final one (70 if the release finds the lock gone).
 */
static int
finish(struct sup *s, int st)
{
	int64_t ran = mono_ms() - s->res->heard_at;
	char took[32], more[32], kept[64] = "";
	int r;

	s->end.exit_status = st;
	s->end.lease_lost = s->lost != HELD;
	s->end.min_hold_ms = s->o->min_hold_ms;
	s->end.ran_ms = ran;
	r = release(s);
	/* Found gone at release: lost while COMMAND ran (if it ran). */
	if (r == 0 && s->exec_errno == 0 && st != RL_EXIT_OSERR)
		st = RL_EXIT_LEASE_LOST;
	if (r == 1) {
		dur_format(ran, took, sizeof(took));
		if (s->o->min_hold_ms > ran) {
			dur_format(s->o->min_hold_ms - ran, more, sizeof(more));
			snprintf(kept, sizeof(kept), "; --min-hold keeps it %s "
			    "more", more);
		}
		msg_event(st == 0 ? LOG_INFO : LOG_WARNING, "released '%s' "
		    "after %s: exit %d%s", s->key, took, st, kept);
	}
	if (r == 1 || r == -1)
		return st;
	/* No release could record it: the lease was lost. */
	s->end.exit_status = st;
	s->end.lease_lost = 1;
	if (lock_record(s->l, s->ctx, &s->end, s->res->fence) < 0)
		msg_warn("could not record the run of '%s': %s", s->key,
		    lock_failure(s->l)->why);
	return st;
}

void
sup_ahead(struct sup_ahead *a, struct lock *l, const struct lock_ctx *ctx)
{
	if (!a->rw.running)
		(void)renew_park(&a->rw, l, ctx);
	if (!a->piped)
		a->piped = pipe2(a->exec_pipe, O_CLOEXEC) == 0;
	oom_reserve();
}

void
sup_ahead_drop(struct sup_ahead *a)
{
	renew_stop(&a->rw);
	if (a->piped) {
		close(a->exec_pipe[0]);
		close(a->exec_pipe[1]);
		a->piped = 0;
	}
	oom_on(NULL);
}

int
sup_stopped(struct lock *l, const struct lock_ctx *ctx, int sigfd)
{
	int sig = sig_take_stop(sigfd), stop;

	if (sig == 0)
		return 0;
	msg_verbose("signal %d before COMMAND started: giving the lock back",
	    sig);
	stop = sig_stop_watch(0);
	lock_set_timeouts(l, SIG_UNDO_MS, SIG_UNDO_MS);
	if (lock_is_open(l) || lock_open(l) == 0)
		(void)lock_release(l, ctx);
	(void)sig_stop_watch(stop);
	return RL_EXIT_SIGNAL_BASE + sig;
}

int
sup_run(const struct rlock_opts *o, struct lock_ctx *ctx, struct lock *l,
    int sigfd, const struct wait_result *res, struct sup_ahead *a)
{
	struct sup s = { .o = o, .ctx = ctx, .l = l, .sigfd = sigfd,
	    .exec_fd = -1, .res = res, .rw = &a->rw, .owner = a->owner };
	int64_t granted = res->granted_at, lease = ctx->lease_ms;
	int st, e = 0;
	char f[24];

	printable(o->key, strlen(o->key), s.key, sizeof(s.key));
	if ((st = confirm_grant(&s, &granted)) != 0)
		return finish(&s, st);
	if ((st = sup_stopped(l, ctx, sigfd)) != 0)
		return st;
	/* From here on a signal is COMMAND's (forwarded), and nothing we
	 * wait for may be cut short by one. */
	(void)sig_stop_watch(0);
	snprintf(f, sizeof(f), "%lld", (long long)res->fence);
	setenv("RLOCK_KEY", o->key, 1);
	setenv("RLOCK_TOKEN", ctx->token, 1);
	setenv("RLOCK_FENCE", f, 1);
	if (s.rw->running)
		atomic_store(&s.rw->last_ok, granted);
	else
		renew_init(s.rw, l, ctx, granted);
	/* Held for --max-hold since the grant, not since COMMAND started
	 * (check_lease); the lease outlives the SIGKILL by a little only. */
	if (o->max_hold_ms > 0)
		s.rw->hold_until = res->heard_at + sup_hold_bound(o, lease);
	oom_sup = &s;
	oom_on(oom_release);
	/* The guard holds from COMMAND's first instruction. */
	watch(&s);
	/* The OS refusing us a pipe or a process is not COMMAND's fault:
	 * 71, not 126 (not executable). The exec pipe first: without it
	 * there is nothing to run, so nothing to renew for. */
	if (s.owner == NULL && !a->piped)
		a->piped = pipe2(a->exec_pipe, O_CLOEXEC) == 0;
	if (s.owner == NULL && !a->piped) {
		msg_err("cannot run COMMAND: pipe: %s", strerror(errno));
		st = RL_EXIT_OSERR;
	} else {
		/* Before COMMAND: spawn() suspends us until its exec.
		 * Without renewal the lease simply runs out: the deadline
		 * logic still stops COMMAND in time. */
		if (renew_start(s.rw) < 0)
			msg_warn("cannot start the renewal thread: %s",
			    strerror(errno));
		st = s.owner == NULL ? spawn(&s, a) : 0;
		if (s.owner != NULL) {
			(void)watch_adopt(&s.watch, s.child = s.owner->pid);
			s.owner->started(s.owner);
		}
	}
	if (st == 0) {
		msg_verbose("running COMMAND (pid %ld) with fence %lld",
		    (long)s.child, (long long)res->fence);
		supervise(&s);
		if ((e = exec_settle(&s)) != 0)
			st = exec_failed(o, e);
		else
			st = exit_status(&s);
	}
	/* Release first: the next holder need not wait for our thread to
	 * end. It can no longer extend (nor touch the connection) from here
	 * on. The watcher, stood down, ends meanwhile; reaped last, once
	 * no other thread is left. */
	watch_stop(&s.watch);
	renew_take_conn(s.rw);
	st = finish(&s, st);
	sup_ahead_drop(a);
	oom_sup = NULL;
	watch_end(&s.watch);
	return st;
}
