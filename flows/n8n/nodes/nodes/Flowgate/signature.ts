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
//
// A work-buffer delivery also carries X-Buffer-Signature = hex
// HMAC-SHA256(secret, timestamp + "\n" + X-Buffer-Message-Id + "\n" +
// X-Buffer-Attempt + "\n" + body) (flowgate's hmacsig.DeliveryMAC): which
// delivery it is, signed, since X-Signature does not cover those headers.
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

/** Whether a secret can sign or verify anything: an empty one cannot (an HMAC with an empty key is no secret). */
function usable(secret: string): boolean {
	return typeof secret === 'string' && secret.length > 0;
}

/**
 * deliveryMAC is X-Buffer-Signature's value (lowercase hex): HMAC-SHA256
 * with secret of timestamp + "\n" + messageId + "\n" + attempt + "\n" +
 * body, the header values exactly as sent (flowgate's hmacsig.DeliveryMAC).
 */
export function deliveryMAC(secret: string, timestamp: string, messageId: string, attempt: string, body: string | Buffer): string {
	if (!usable(secret)) throw new Error('no secret to sign the delivery with');
	return mac(secret, String(timestamp) + '\n' + String(messageId) + '\n' + String(attempt) + '\n', toBuffer(body));
}

/**
 * verify checks a signed request the way flowgate's verifier does:
 * X-Timestamp within ±300 s, X-Signature (optionally "sha256=") the HMAC of
 * version 1 or 2 (X-Signature-Version), each signature once. It returns
 * null or a Refusal with flowgate's reason.
 *
 * replayKey is added to the signature for the replay check. A work-buffer
 * delivery is not told apart by it: X-Signature does not cover
 * X-Buffer-Message-Id or X-Buffer-Attempt, so two messages with one payload
 * in a second share it and a resent one can name any delivery; verify those
 * with verifyDelivery, which keys the replay guard on X-Buffer-Signature.
 *
 * An empty secret verifies nothing: verify throws rather than accept a
 * signature made with an empty key.
 */
export function verify(
	secret: string,
	req: SignedRequest,
	replay?: ReplayCache,
	replayKey = '',
	nowMs: number = Date.now(),
): Refusal | null {
	if (!usable(secret)) throw new Error('no secret to verify the signature with: refusing every request');
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

/** The first value of a header exactly as received (no trimming): what flowgate's DeliveryMAC covered. */
function rawHeader(h: SignedRequest['headers'], name: string): string | undefined {
	const v = h[name];
	const first = Array.isArray(v) ? v[0] : v;
	return first === undefined || first === null ? undefined : String(first);
}

/**
 * verifyDelivery checks a work-buffer delivery: X-Signature as verify does
 * (no replay check there), then X-Buffer-Signature, required, the
 * deliveryMAC of X-Timestamp, X-Buffer-Message-Id, X-Buffer-Attempt and the
 * body (compared in constant time). The replay guard is keyed on
 * X-Buffer-Signature alone: one entry per delivery, so two messages with
 * one payload sent in the same second (one X-Signature) are two
 * deliveries, a retry is a new one, and a captured delivery resent (with
 * another attempt or message id, which then fails to verify) is refused.
 */
export function verifyDelivery(secret: string, req: SignedRequest, replay?: ReplayCache, nowMs: number = Date.now()): Refusal | null {
	const refused = verify(secret, req, undefined, '', nowMs);
	if (refused) return refused;
	const refuse = (reason: string, message: string): Refusal => ({ status: 401, code: 'unauthorized', reason, message });
	const got = header(req.headers, 'x-buffer-signature');
	if (!got) return refuse('missing_headers', 'missing X-Buffer-Signature header');
	if (!/^[0-9a-fA-F]{64}$/.test(got)) {
		return refuse('bad_signature', 'X-Buffer-Signature must be the hex HMAC-SHA256 of the delivery');
	}
	const want = deliveryMAC(secret, rawHeader(req.headers, 'x-timestamp') || '', rawHeader(req.headers, 'x-buffer-message-id') || '',
		rawHeader(req.headers, 'x-buffer-attempt') || '', toBuffer(req.body));
	if (!timingSafeEqual(Buffer.from(got.toLowerCase(), 'hex'), Buffer.from(want, 'hex'))) {
		return refuse('bad_signature', 'X-Buffer-Signature does not match the delivery (X-Timestamp, X-Buffer-Message-Id, X-Buffer-Attempt, body)');
	}
	if (replay && replay.check('delivery|' + got.toLowerCase(), nowMs)) {
		return refuse('replayed', 'request was already received');
	}
	return null;
}
