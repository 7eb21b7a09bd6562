// flowgate's request signature (the scheme of flowgate's webhooks/signature
// package), byte for byte what node-red-contrib-flowgate's lib/flowgate.js
// computes, and the verifier of the signed posts flowgate sends to a
// work-buffer handler. Node's crypto only: a Go test requires the compiled
// dist/nodes/Flowgate/signature.js and checks both against flowgate's own
// signer and verifier.
//
// Version 1 (the seed's scheme): X-Signature = hex HMAC-SHA256(secret,
// timestamp + "." + body). Version 2 (sent with X-Signature-Version: 2):
// hex HMAC-SHA256(secret, timestamp + "." + METHOD + " " + target + "." +
// body), where target is the path with its query exactly as sent.
// X-Timestamp is unix seconds. flowgate accepts a timestamp within ±300 s of
// its clock and each signature once.
import { createHmac, randomUUID, timingSafeEqual } from 'crypto';

/** flowgate's tolerance for X-Timestamp, in seconds. */
export const TOLERANCE_S = 300;

export interface SignOptions {
	/** unix seconds; now when unset */
	timestamp?: number | string;
	method?: string;
	/** the path with its query, exactly as sent: /queue?status=PENDING */
	target?: string;
	/** the exact bytes sent ("" when none) */
	body?: string | Buffer;
	/** '2' (default) or '1' */
	version?: string;
}

export type SignatureHeaders = Record<string, string>;

function toBuffer(b: string | Buffer | undefined | null): Buffer {
	if (b === undefined || b === null) return Buffer.alloc(0);
	return Buffer.isBuffer(b) ? b : Buffer.from(String(b), 'utf8');
}

function mac(secret: string, head: string, body: Buffer): string {
	return createHmac('sha256', Buffer.from(String(secret), 'utf8'))
		.update(Buffer.concat([Buffer.from(head, 'utf8'), body]))
		.digest('hex');
}

/** The X-Timestamp, X-Signature (and, for version 2, X-Signature-Version) headers of a request. */
export function sign(secret: string, opts: SignOptions): SignatureHeaders {
	const ts = String(opts.timestamp !== undefined ? opts.timestamp : Math.floor(Date.now() / 1000));
	const body = toBuffer(opts.body);
	if (String(opts.version || '2') === '1') {
		return { 'X-Timestamp': ts, 'X-Signature': mac(secret, ts + '.', body) };
	}
	const head = ts + '.' + String(opts.method || '').toUpperCase() + ' ' + String(opts.target || '') + '.';
	return { 'X-Timestamp': ts, 'X-Signature': mac(secret, head, body), 'X-Signature-Version': '2' };
}

/** A fresh nonce: flowgate refuses a signature it has seen, so two identical calls in one second must differ. */
export function nonce(): string {
	return randomUUID();
}

/** ReplayCache remembers signatures for ttl ms: each is accepted once. */
export class ReplayCache {
	private seen = new Map<string, number>();

	constructor(private ttl: number) {}

	/** check records key and reports whether it was there already. */
	check(key: string, now: number = Date.now()): boolean {
		if (this.seen.size > 1000) {
			for (const [k, until] of this.seen) {
				if (until <= now) this.seen.delete(k);
			}
		}
		const until = this.seen.get(key);
		if (until !== undefined && until > now) return true;
		this.seen.set(key, now + this.ttl);
		return false;
	}
}

export interface SignedRequest {
	method: string;
	/** path and query as received */
	target: string;
	/** lower-case keys */
	headers: Record<string, string | string[] | undefined>;
	body: Buffer | string;
}

export interface Refusal {
	status: 401;
	code: 'unauthorized';
	/** flowgate's reasons: missing_headers, bad_timestamp, expired, bad_version, malformed_signature, bad_signature, replayed */
	reason: string;
	message: string;
}

function header(h: SignedRequest['headers'], name: string): string {
	const v = h[name];
	return String((Array.isArray(v) ? v[0] : v) || '').trim();
}

/**
 * verify checks a signed request the way flowgate's verifier does:
 * X-Timestamp within ±300 s, X-Signature (optionally "sha256=") the HMAC of
 * version 1 or 2 (X-Signature-Version), each signature once. It returns
 * null or a Refusal with flowgate's reason.
 *
 * replayKey is added to the signature for the replay check: flowgate's
 * version-1 sender signs only timestamp and body, so two attempts of one
 * message in the same second carry the same signature; their
 * X-Buffer-Attempt tells them apart.
 */
export function verify(
	secret: string,
	req: SignedRequest,
	replay?: ReplayCache,
	replayKey = '',
	nowMs: number = Date.now(),
): Refusal | null {
	const ts = header(req.headers, 'x-timestamp');
	let sig = header(req.headers, 'x-signature');
	const refuse = (reason: string, message: string): Refusal => ({ status: 401, code: 'unauthorized', reason, message });
	if (!ts && !sig) return refuse('missing_headers', 'missing X-Timestamp and X-Signature headers');
	if (!ts) return refuse('missing_headers', 'missing X-Timestamp header');
	if (!sig) return refuse('missing_headers', 'missing X-Signature header');
	if (!/^\d{1,19}$/.test(ts)) return refuse('bad_timestamp', 'X-Timestamp must be unix time in seconds');
	const skew = nowMs / 1000 - Number(ts);
	if (skew > TOLERANCE_S) return refuse('expired', 'request timestamp is too old');
	if (skew < -TOLERANCE_S) return refuse('expired', 'request timestamp is too far in the future');
	const version = header(req.headers, 'x-signature-version') || '1';
	if (version !== '1' && version !== '2') return refuse('bad_version', 'X-Signature-Version must be 1 or 2');
	if (sig.length > 7 && sig.slice(0, 7).toLowerCase() === 'sha256=') sig = sig.slice(7);
	if (!/^[0-9a-fA-F]{64}$/.test(sig)) {
		return refuse('malformed_signature', 'X-Signature must be the hex HMAC-SHA256 of the signed string');
	}
	const want = sign(secret, { timestamp: ts, method: req.method, target: req.target, body: req.body, version })['X-Signature'];
	if (!timingSafeEqual(Buffer.from(sig.toLowerCase(), 'hex'), Buffer.from(want, 'hex'))) {
		return refuse('bad_signature', 'signature does not match');
	}
	if (replay && replay.check(sig.toLowerCase() + '|' + replayKey, nowMs)) {
		return refuse('replayed', 'request was already received');
	}
	return null;
}
