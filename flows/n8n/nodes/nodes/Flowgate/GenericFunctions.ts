// The shared part of the flowgate nodes: the credentials read once, a call
// to flowgate signed (version 2, with a nonce), authenticated with the
// buffer token or sent bare, and flowgate's error envelope turned into a
// FlowgateError. The same steps as node-red-contrib-flowgate's
// lib/flowgate.js Client, through n8n's own HTTP helper (proxies, n8n's
// request logging).
import { createHash } from 'crypto';
import type { IDataObject, IHttpRequestOptions } from 'n8n-workflow';

import { nonce, sign } from './signature';

/** The flowgateApi credentials. */
export interface FlowgateCredentials {
	baseUrl: string;
	hmacSecret?: string;
	webhookToken?: string;
	bufferToken?: string;
	signatureVersion?: string;
}

/** What a call needs of the n8n context it runs in (execute, trigger, credential test). */
export interface HttpContext {
	helpers: { httpRequest(opts: IHttpRequestOptions): Promise<any> };
}

/** auth: hmac (the queue API and the ACK/FAIL webhooks), buffer (the work buffer's token) or none (holds). */
export type Auth = 'hmac' | 'buffer' | 'none';

export interface CallOptions {
	auth: Auth;
	/** sent as JSON; with hmac auth an object gets a nonce */
	body?: IDataObject;
	/** query parameters, in this order */
	query?: Array<[string, string]>;
	/** the route accepts the seed's version 1 (create, ACK, FAIL): the credentials may choose it */
	v1ok?: boolean;
	/** ms; default 30 s */
	timeout?: number;
	abortSignal?: AbortSignal;
	/** the path as errors name it, when path carries a secret (a hold id: /v1/holds/ref-…) */
	label?: string;
	/** secrets never to appear in an error's message (a hold id), replaced there by [redacted] */
	redact?: string[];
}

/**
 * holdRef is a hold's public reference, as flowgate's holds.Ref computes it
 * and logs paths with: "ref-" + the first 128 bits of SHA-256 of a fixed
 * domain string and the hold id. A hold id is a bearer secret (flowgate's
 * docs/holds.md): errors name the hold by this instead.
 */
export function holdRef(holdId: string): string {
	if (!holdId) return '';
	return 'ref-' + createHash('sha256').update('flowgate holds: public ref\u0000' + holdId, 'utf8').digest('hex').slice(0, 32);
}

/** err with every secret in its message replaced by [redacted] (secrets under 4 characters are left: they would mangle the text). */
function redacted<E extends Error>(err: E, secrets: string[] | undefined): E {
	for (const x of secrets || []) {
		if (x && x.length >= 4) err.message = err.message.split(x).join('[redacted]');
	}
	return err;
}

export interface Answer {
	status: number;
	headers: IDataObject;
	/** parsed JSON, the text when not JSON, null when empty */
	body: any;
}

/**
 * FlowgateError is a refused or failed call: status is the HTTP status (0
 * when no answer came); code is flowgate's machine-readable code (invalid,
 * unauthorized, not_found, conflict, rate_limited, unavailable, QUEUE_FULL,
 * HANDLER_NOT_FOUND, …) or, without an answer, unreachable; details carry
 * details.reason of a refused signature (bad_signature, expired, replayed).
 */
export class FlowgateError extends Error {
	status: number;
	code: string;
	details?: IDataObject;
	requestId?: string;
	retryAfter?: number;

	constructor(message: string, info: { status?: number; code?: string; details?: IDataObject; requestId?: string; retryAfter?: number }) {
		super(message);
		this.name = 'FlowgateError';
		this.status = info.status || 0;
		this.code = info.code || 'error';
		if (info.details !== undefined) this.details = info.details;
		if (info.requestId) this.requestId = info.requestId;
		if (info.retryAfter !== undefined) this.retryAfter = info.retryAfter;
	}

	/** {message, code, status, details, requestId, retryAfter}: what an item of "Continue (using error output)" carries. */
	toJSON(): IDataObject {
		const o: IDataObject = { message: this.message, code: this.code, status: this.status };
		if (this.details !== undefined) o.details = this.details;
		if (this.requestId) o.requestId = this.requestId;
		if (this.retryAfter !== undefined) o.retryAfter = this.retryAfter;
		return o;
	}
}

/** flowgate's code of an HTTP status (contracts.CodeForStatus), for answers without an envelope. */
export function codeForStatus(status: number): string {
	const codes: Record<number, string> = {
		400: 'invalid', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed',
		408: 'timeout', 409: 'conflict', 413: 'too_large', 429: 'rate_limited', 431: 'headers_too_large', 503: 'unavailable',
	};
	return codes[status] || (status >= 400 && status < 500 ? 'invalid' : 'internal');
}

/** The FlowgateError of a non-2xx answer, from flowgate's envelope {"success":false,"error":{code,message,request_id,details}}. */
export function answerError(method: string, path: string, status: number, headers: IDataObject, body: any): FlowgateError {
	let code: string | undefined;
	let message: string | undefined;
	let details: IDataObject | undefined;
	let requestId: string | undefined;
	const env = body && typeof body === 'object' ? body.error : undefined;
	if (env && typeof env === 'object') {
		code = env.code;
		message = env.message;
		details = env.details;
		requestId = env.request_id;
	} else if (body && typeof body === 'object' && typeof body.error === 'string') {
		message = body.error;
		code = body.code;
	}
	if (!code) code = codeForStatus(status);
	if (!message) message = typeof body === 'string' && body ? body.slice(0, 200) : 'HTTP ' + status;
	let retryAfter: number | undefined;
	const ra = headers['retry-after'];
	if (ra !== undefined && /^\d+$/.test(String(ra).trim())) retryAfter = Number(ra);
	return new FlowgateError(`${method} ${path}: ${status} ${code}: ${message}`, {
		status, code, details, requestId: requestId || (headers['x-request-id'] as string | undefined), retryAfter,
	});
}

/** The base URL without trailing slashes, checked: http:// or https://. */
export function baseUrl(creds: FlowgateCredentials): string {
	const base = String(creds.baseUrl || '').trim().replace(/\/+$/, '');
	let u: URL;
	try {
		u = new URL(base);
	} catch (e) {
		throw new FlowgateError('invalid flowgate URL ' + JSON.stringify(base), { code: 'config' });
	}
	if (u.protocol !== 'http:' && u.protocol !== 'https:') {
		throw new FlowgateError('the flowgate URL must be http:// or https://', { code: 'config' });
	}
	return base;
}

/**
 * The authentication headers of a request: hmac signs with the HMAC secret
 * (version 2, or 1 where v1ok and the credentials chose it) and/or sends the
 * webhook token; buffer sends the buffer token.
 */
export function authHeaders(creds: FlowgateCredentials, auth: Auth, method: string, target: string, body: string, v1ok = false): Record<string, string> {
	const h: Record<string, string> = {};
	if (auth === 'buffer') {
		if (creds.bufferToken) h.Authorization = 'Bearer ' + creds.bufferToken;
	} else if (auth === 'hmac') {
		if (creds.hmacSecret) {
			const version = v1ok && String(creds.signatureVersion) === '1' ? '1' : '2';
			Object.assign(h, sign(creds.hmacSecret, { method, target, body, version }));
		}
		if (creds.webhookToken) h.Authorization = 'Bearer ' + creds.webhookToken;
	}
	return h;
}

/**
 * The target (path and query, as signed and sent) and the body of a call.
 * A signed call carries a fresh nonce: in its JSON body, or in the query
 * of a call without one (flowgate ignores the parameter), so two identical
 * calls in one second are two requests, not a replay.
 */
export function prepare(creds: FlowgateCredentials, method: string, path: string, opts: CallOptions): { target: string; body: string } {
	const signed = opts.auth === 'hmac' && !!creds.hmacSecret;
	const query = [...(opts.query || [])];
	let body = '';
	if (opts.body !== undefined) {
		const b = signed ? { ...opts.body, nonce: nonce() } : opts.body;
		body = JSON.stringify(b);
	} else if (signed) {
		query.push(['nonce', nonce()]);
	}
	const qs = query.map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
	return { target: path + (qs ? '?' + qs : ''), body };
}

/**
 * call sends one request to flowgate and resolves its 2xx answer; anything
 * else rejects with a FlowgateError.
 */
export async function call(ctx: HttpContext, creds: FlowgateCredentials, method: string, path: string, opts: CallOptions): Promise<Answer> {
	const shown = opts.label || path;
	const base = baseUrl(creds);
	const { target, body } = prepare(creds, method, path, opts);
	const headers: IDataObject = {
		Accept: 'application/json',
		...authHeaders(creds, opts.auth, method, new URL(base + target).pathname + new URL(base + target).search, body, opts.v1ok),
	};
	if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
	let res: any;
	try {
		res = await ctx.helpers.httpRequest({
			method: method as IHttpRequestOptions['method'],
			url: base + target,
			headers,
			body: opts.body !== undefined ? body : undefined,
			json: false,
			encoding: 'text',
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
			disableFollowRedirect: true,
			timeout: opts.timeout || 30000,
			abortSignal: opts.abortSignal as IHttpRequestOptions['abortSignal'],
		});
	} catch (e) {
		if (e && (e.name === 'AbortError' || e.code === 'ERR_CANCELED')) {
			throw new FlowgateError(`${method} ${shown}: aborted`, { code: 'aborted' });
		}
		const cause = e && (e.code || (e.cause && e.cause.code));
		throw redacted(new FlowgateError(`${method} ${shown}: ${e && e.message ? e.message : String(e)}`, {
			code: cause === 'ECONNABORTED' || /timeout/i.test(String(e && e.message)) ? 'client_timeout' : 'unreachable',
			details: cause ? { cause } : undefined,
		}), opts.redact);
	}
	const status: number = res.statusCode;
	const resHeaders: IDataObject = res.headers || {};
	let parsed: any = null;
	const raw = typeof res.body === 'string' ? res.body : res.body === undefined || res.body === null ? '' : Buffer.isBuffer(res.body) ? res.body.toString('utf8') : res.body;
	if (typeof raw === 'string') {
		if (raw.length) {
			try {
				parsed = JSON.parse(raw);
			} catch (e) {
				parsed = raw;
			}
		}
	} else {
		parsed = raw;
	}
	if (status < 200 || status > 299) throw redacted(answerError(method, shown, status, resHeaders, parsed), opts.redact);
	return { status, headers: resHeaders, body: parsed };
}
