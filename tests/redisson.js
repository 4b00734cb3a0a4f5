// SPDX-License-Identifier: MIT
// redisson.js SOCKET STEP...: a Redisson-protocol client for
// tests/redisson.bats and the torture scenario. The plain lock is
// node-redisson's (npm; found through NODE_PATH), which runs Redisson's
// scripts against ioredis; node-redisson has no fair lock, so `fair` and
// `fairunlock` speak Redisson's fair lock with scripts written here from
// shared/REDISSON.md and the rule of RedissonFairLock.java. Steps, in
// order:
//   lock KEY               node-redisson lock(): wait, then hold (watchdog)
//   locklease KEY MS       lock(MS): hold for a lease of MS, no watchdog
//   trylock KEY MS         tryLock(MS): prints "got KEY" or "busy KEY"
//   unlock KEY             unlock() (one re-entry)
//   force KEY              forceUnlock()
//   fair KEY ID            the fair lock for field ID, waiting in line
//   fairunlock KEY ID      its unlock
//   sections KEY STOP ID MIN MAX CMD...
//                          until the file STOP exists: lock, run CMD and
//                          a random MIN-MAX (ms) with TORTURE_ID=ID.N,
//                          unlock (the torture's Redisson workers)
//   print WORD             prints "WORD <epoch ms>"
//   sleep MS | waitfile PATH
// Each lock step on a KEY uses one lock object, so a second `lock` of it
// is a re-entry of the same client. Exit status 0, or 1 on an error.
'use strict';
const { Redisson } = require('node-redisson');
const Redis = require('ioredis');
const fs = require('fs');
const { spawnSync } = require('child_process');

const [sock, ...steps] = process.argv.slice(2);
// REDISSON_WATCHDOG_MS: Redisson's lockWatchdogTimeout (30 s).
const redisson = new Redisson({ redis: { options: { path: sock } },
    lockWatchdogTimeout: BigInt(process.env.REDISSON_WATCHDOG_MS || 30000) });
const plain = new Redis({ path: sock });
const locks = new Map();
// Redisson's fairLockWaitTimeout as it ships.
const WAIT = 300000;
const LEASE = 30000;

function lockOf(key) {
	if (!locks.has(key))
		locks.set(key, redisson.getLock(key));
	return locks.get(key);
}

// Redisson's names: KEY in braces unless it holds a '{' (prefixName).
function named(prefix, key) {
	return prefix + ':' + (key.includes('{') ? key : '{' + key + '}');
}

// KEYS lock queue timeouts; ARGV lease field allowance now.
const FAIR_ACQUIRE = `
local now = tonumber(ARGV[4])
while true do
  local h = redis.call('lindex', KEYS[2], 0)
  if not h then break end
  local t = redis.call('zscore', KEYS[3], h)
  if not t or tonumber(t) > now then break end
  redis.call('zrem', KEYS[3], h)
  redis.call('lpop', KEYS[2])
end
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and (not head or head == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  for _, f in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), f)
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local lt = last and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last)
local ttl = lt and tonumber(lt) - now or redis.call('pttl', KEYS[1])
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, ARGV[2]) == 1
then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl`;

// KEYS lock queue timeouts channel; ARGV lease field now.
const FAIR_RELEASE = `
local now = tonumber(ARGV[3])
while true do
  local h = redis.call('lindex', KEYS[2], 0)
  if not h then break end
  local t = redis.call('zscore', KEYS[3], h)
  if not t or tonumber(t) > now then break end
  redis.call('zrem', KEYS[3], h)
  redis.call('lpop', KEYS[2])
end
local function wake()
  local n = redis.call('lindex', KEYS[2], 0)
  if n then redis.call('publish', KEYS[4] .. ':' .. n, 0) end
end
if redis.call('exists', KEYS[1]) == 0 then wake() return 1 end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
wake()
return 1`;

function fairKeys(key) {
	return [key, named('redisson_lock_queue', key),
	    named('redisson_lock_timeout', key)];
}

// Wait in line for field id, woken on its own channel (or at the ttl).
async function fair(key, id) {
	const keys = fairKeys(key);
	const ch = named('redisson_lock__channel', key) + ':' + id;
	const sub = new Redis({ path: sock });
	let wake = null;
	sub.on('message', () => { if (wake) wake(); });
	try {
		await sub.subscribe(ch);
		for (;;) {
			const ttl = await plain.eval(FAIR_ACQUIRE, 3, ...keys,
			    LEASE, id, WAIT, Date.now());
			if (ttl === null)
				return;
			await new Promise((res) => {
				wake = res;
				setTimeout(res, Math.max(Number(ttl), 5));
			});
			wake = null;
		}
	} finally {
		sub.disconnect();
	}
}

async function fairUnlock(key, id) {
	const r = await plain.eval(FAIR_RELEASE, 4, ...fairKeys(key),
	    named('redisson_lock__channel', key), LEASE, id, Date.now());
	if (r === null)
		throw new Error('fairunlock ' + key + ': not held by ' + id);
}

async function main() {
	for (let i = 0; i < steps.length;) {
		const s = steps[i++];
		const arg = () => steps[i++];
		switch (s) {
		case 'lock':
			await lockOf(arg()).lock();
			break;
		case 'locklease': {
			const k = arg();
			await lockOf(k).lock(Number(arg()));
			break;
		}
		case 'trylock': {
			const k = arg();
			const got = await lockOf(k).tryLock(Number(arg()));
			console.log((got ? 'got ' : 'busy ') + k);
			break;
		}
		case 'unlock':
			await lockOf(arg()).unlock();
			break;
		case 'force':
			await lockOf(arg()).forceUnlock();
			break;
		case 'fair': {
			const k = arg();
			await fair(k, arg());
			break;
		}
		case 'fairunlock': {
			const k = arg();
			await fairUnlock(k, arg());
			break;
		}
		case 'sections': {
			const [k, stop, id, min, max] = steps.slice(i, i + 5);
			const cmd = steps.slice(i + 5);
			i = steps.length;
			for (let n = 1; !fs.existsSync(stop); n++) {
				const ms = Number(min) + Math.floor(Math.random() *
				    (Number(max) - Number(min) + 1));
				await lockOf(k).lock();
				spawnSync(cmd[0], [...cmd.slice(1), String(ms)], {
					stdio: 'inherit', env: { ...process.env,
					TORTURE_ID: id + '.' + n } });
				await lockOf(k).unlock();
			}
			break;
		}
		case 'print':
			console.log(arg() + ' ' + Date.now());
			break;
		case 'sleep':
			await new Promise((r) => setTimeout(r, Number(arg())));
			break;
		case 'waitfile': {
			const p = arg();
			while (!fs.existsSync(p))
				await new Promise((r) => setTimeout(r, 10));
			break;
		}
		default:
			throw new Error('unknown step ' + s);
		}
	}
}

// Exit at once: node-redisson leaves a subscription's timer behind.
main().then(() => process.exit(0), (e) => {
	console.error('redisson.js: ' + e.message);
	process.exit(1);
});
