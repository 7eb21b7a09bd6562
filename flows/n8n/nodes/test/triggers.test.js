// The Flowgate Trigger (claim, one execution per task, heartbeat, ACK/FAIL
// from the outcome) and the Flowgate Handler Trigger (signature verified)
// against fakes of n8n's trigger and webhook contexts.
const test = require('node:test');
const assert = require('node:assert');
const { dist, fakeHttp } = require('./helpers');

const { FlowgateTrigger } = require(dist('nodes/FlowgateTrigger/FlowgateTrigger.node.js'));
const { FlowgateHandlerTrigger } = require(dist('nodes/FlowgateHandlerTrigger/FlowgateHandlerTrigger.node.js'));
const sig = require(dist('nodes/Flowgate/signature.js'));

const creds = { baseUrl: 'http://flowgate.test', hmacSecret: 'unit-test-secret-0123456789' };

function deferred() {
	let resolve, reject;
	const promise = new Promise((a, b) => { resolve = a; reject = b; });
	return { promise, resolve, reject };
}

function run(lastNode, json, error) {
	return {
		status: error ? 'error' : 'success',
		data: { resultData: { error, lastNodeExecuted: lastNode, runData: { [lastNode]: [{ data: { main: [[{ json }]] } }] } } },
	};
}

// trigger activates a Flowgate Trigger on a fake flowgate that hands out
// tasks one per claim; answer(path, req) may answer a request first.
async function trigger(tasks, params, { answer, mode = 'trigger' } = {}) {
	const queue = [...tasks];
	const http = fakeHttp(async (req) => {
		const path = new URL(req.url).pathname;
		const a = answer && (await answer(path, req));
		if (a) return a;
		if (path === '/queue/claim') {
			if (queue.length) return { status: 200, body: { success: true, tasks: [queue.shift()] } };
			await new Promise((r) => setTimeout(r, 20));
			return { status: 204 };
		}
		return { status: 200, body: { success: true } };
	});
	const emitted = [];
	const errors = [];
	const logged = [];
	const ctx = {
		getCredentials: async () => creds,
		getNodeParameter: (name, fallback) => (params[name] === undefined ? fallback : params[name]),
		getWorkflow: () => ({ id: 'wf7' }),
		getMode: () => mode,
		getNode: () => ({ name: 'Flowgate Trigger', type: 'n8n-nodes-flowgate.flowgateTrigger', typeVersion: 1, parameters: {} }),
		logger: { warn: (m) => logged.push(m), error: (m) => logged.push(m), info() {} },
		helpers: { ...http, createDeferredPromise: deferred },
		emit: (data, _resp, done) => emitted.push({ data, done }),
		emitError: (e) => errors.push(e),
	};
	const res = await new FlowgateTrigger().trigger.call(ctx);
	return { http, emitted, res, errors, logged };
}

const claims = (http) => http.requests.filter((r) => r.url.endsWith('/queue/claim')).map((r) => JSON.parse(r.body));
const posted = (http, p) => http.requests.filter((r) => new URL(r.url).pathname === p).map((r) => JSON.parse(r.body));

const until = async (cond) => {
	for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
	assert.ok(cond(), 'timed out');
};

test('trigger: one execution per task, heartbeats, ACK with the last output, FAIL with the error', async () => {
	const t1 = { queue_id: 'q1', encounter_id: 'e1', payload: { n: 1 } };
	const t2 = { queue_id: 'q2', encounter_id: 'e2', payload: {} };
	const { http, emitted, res } = await trigger([t1, t2], { completion: 'execution', options: { heartbeatS: 0.05, concurrency: 2, waitMs: 0 } });
	await until(() => emitted.length === 2);
	assert.deepStrictEqual(emitted.map((e) => e.data[0][0].json.queue_id), ['q1', 'q2']);
	await until(() => http.requests.some((r) => r.url.endsWith('/queue/q1/heartbeat')));
	emitted[0].done.resolve(run('Code', { result: 'ok' }));
	emitted[1].done.resolve(run('Code', {}, { message: 'disk full' }));
	await until(() => http.requests.some((r) => r.url.endsWith('/ack')) && http.requests.some((r) => r.url.endsWith('/fail')));
	await res.closeFunction();
	const ack = JSON.parse(http.requests.find((r) => r.url.endsWith('/ack')).body);
	assert.deepStrictEqual({ ...ack, nonce: undefined }, { queue_id: 'q1', encounter_id: 'e1', worker_id: 'n8n-wf7', experityActions: { result: 'ok' }, nonce: undefined });
	const fail = JSON.parse(http.requests.find((r) => r.url.endsWith('/fail')).body);
	assert.strictEqual(fail.error_message, 'disk full');
	const claim = JSON.parse(http.requests.find((r) => r.url.endsWith('/queue/claim')).body);
	assert.strictEqual(claim.worker_id, 'n8n-wf7');
	for (const r of http.requests) assert.strictEqual(r.headers['X-Signature-Version'], '2');
});

test('trigger: "by a Flowgate node" sends no ACK/FAIL of its own', async () => {
	const { http, emitted, res } = await trigger([{ queue_id: 'q3', encounter_id: 'e3' }], { completion: 'workflow', options: { waitMs: 0 } });
	await until(() => emitted.length === 1);
	emitted[0].done.resolve(run('Flowgate', { success: true }));
	await new Promise((r) => setTimeout(r, 50));
	await res.closeFunction();
	assert.ok(!http.requests.some((r) => r.url.endsWith('/ack') || r.url.endsWith('/fail')));
});

test("trigger: its options stop at flowgate's bounds (wait_ms ≤ 20000, limit ≤ 50) and the code clamps to them", async () => {
	const opts = Object.fromEntries(new FlowgateTrigger().description.properties.find((p) => p.name === 'options').options.map((o) => [o.name, o]));
	assert.strictEqual(opts.waitMs.typeOptions.maxValue, 20000);
	assert.strictEqual(opts.waitMs.default, 20000);
	assert.strictEqual(opts.concurrency.typeOptions.maxValue, 50);
	// Values over the bounds (an old workflow, an expression) are clamped.
	const { http, res } = await trigger([], { completion: 'execution', options: { concurrency: 80, waitMs: 30000 } }, {
		answer: (path, req) => {
			if (path !== '/queue/claim') return undefined;
			const b = JSON.parse(req.body);
			// flowgate's own checks (taskhttp): 400 beyond them.
			if (b.wait_ms > 20000) return { status: 400, body: { success: false, error: { code: 'invalid', message: 'wait_ms must be 0..20000' } } };
			if (b.limit < 1 || b.limit > 50) return { status: 400, body: { success: false, error: { code: 'invalid', message: 'limit must be 1..50' } } };
			return undefined; // the fake's 204, after a moment
		},
	});
	await until(() => claims(http).some((c) => c.wait_ms > 0));
	await res.closeFunction();
	for (const c of claims(http)) {
		assert.ok(c.limit >= 1 && c.limit <= 50, JSON.stringify(c));
		assert.ok(c.wait_ms >= 0 && c.wait_ms <= 20000, JSON.stringify(c));
	}
	assert.deepStrictEqual(claims(http).map((c) => [c.limit, c.wait_ms]).slice(0, 2), [[50, 0], [50, 20000]]);
});

const refuse = (status, code, message, details) => ({ status, body: { success: false, error: { code, message, details } } });

test('trigger: a claim refused at activation (4xx) fails the activation, with the reason', async () => {
	await assert.rejects(
		trigger([], { options: { waitMs: 0 } }, { answer: (p) => (p === '/queue/claim' ? refuse(401, 'unauthorized', 'signature does not match', { reason: 'bad_signature' }) : undefined) }),
		(e) => e.name === 'NodeOperationError' && /refuses the trigger's claim: POST \/queue\/claim: 401 unauthorized: signature does not match \(reason: bad_signature\)/.test(e.message) && /credential/.test(e.description));
});

test('trigger: a claim refused later (4xx) is reported to n8n (emitError) and the claims stop; 5xx and 429 are retried', async () => {
	let n = 0;
	let status = 204;
	const { http, errors, logged, res } = await trigger([], { options: { waitMs: 0 } }, {
		answer: (p) => {
			if (p !== '/queue/claim') return undefined;
			n++;
			if (status === 204) return undefined; // the fake's 204, after a moment
			return status === 400 ? refuse(400, 'invalid', 'limit must be 1..50') : refuse(status, status === 429 ? 'rate_limited' : 'unavailable', 'busy');
		},
	});
	await until(() => n >= 2);
	status = 503;
	const at503 = n;
	await until(() => n >= at503 + 1);
	assert.strictEqual(errors.length, 0, 'a 503 is a passing failure');
	assert.ok(logged.some((m) => /claim failed, again in/.test(m)));
	status = 400;
	await until(() => errors.length === 1);
	const stoppedAt = n;
	assert.strictEqual(errors[0].name, 'NodeOperationError');
	assert.match(errors[0].message, /Flowgate refuses the trigger's claim: POST \/queue\/claim: 400 invalid: limit must be 1..50/);
	await new Promise((r) => setTimeout(r, 1200));
	assert.strictEqual(n, stoppedAt, 'no claim after the trigger stopped');
	assert.strictEqual(errors.length, 1);
	await res.closeFunction();
	assert.ok(claims(http).length >= 3);
});

test('trigger: manual mode ("Test workflow") names a refused claim as a configuration error', async () => {
	const { res } = await trigger([], { options: { waitMs: 0 } }, { mode: 'manual', answer: (p) => (p === '/queue/claim' ? refuse(400, 'invalid', 'wait_ms must be 0..20000') : undefined) });
	await assert.rejects(res.manualTriggerFunction(), /Flowgate refuses the trigger's claim: POST \/queue\/claim: 400 invalid: wait_ms must be 0..20000/);
	await res.closeFunction();
});

test('trigger: an ACK refused for good (413) is followed by a FAIL saying why; a 409 is not', async () => {
	const t1 = { queue_id: 'q413', encounter_id: 'e413' };
	const t2 = { queue_id: 'q409', encounter_id: 'e409' };
	const { http, emitted, res } = await trigger([t1, t2], { completion: 'execution', options: { concurrency: 2, waitMs: 0 } }, {
		answer: (p, req) => {
			if (p !== '/ack') return undefined;
			const b = JSON.parse(req.body);
			return b.queue_id === 'q413' ? refuse(413, 'too_large', 'request body too large') : refuse(409, 'conflict', 'task is PENDING', { current_status: 'PENDING' });
		},
	});
	await until(() => emitted.length === 2);
	emitted[0].done.resolve(run('Code', { big: 'x'.repeat(1000) }));
	emitted[1].done.resolve(run('Code', { ok: true }));
	await until(() => posted(http, '/fail').length === 1 && posted(http, '/ack').length === 2);
	await new Promise((r) => setTimeout(r, 50));
	await res.closeFunction();
	const acks = posted(http, '/ack');
	assert.deepStrictEqual(acks.map((a) => a.queue_id).sort(), ['q409', 'q413'], 'each ACK sent once: a 4xx is not retried');
	const fails = posted(http, '/fail');
	assert.strictEqual(fails.length, 1, 'no FAIL after a 409');
	assert.strictEqual(fails[0].queue_id, 'q413');
	assert.strictEqual(fails[0].encounter_id, 'e413');
	assert.strictEqual(fails[0].worker_id, 'n8n-wf7');
	assert.match(fails[0].error_message, /refused the ACK.*413 too_large: request body too large/);
});

test("trigger: a FAIL's error_message stays within flowgate's 4096 bytes", async () => {
	const { http, emitted, res } = await trigger([{ queue_id: 'qbig', encounter_id: 'ebig' }], { completion: 'execution', options: { waitMs: 0 } });
	await until(() => emitted.length === 1);
	emitted[0].done.resolve(run('Code', {}, { message: 'é'.repeat(1_000_000) }));
	await until(() => posted(http, '/fail').length === 1);
	await res.closeFunction();
	const m = posted(http, '/fail')[0].error_message;
	assert.ok(Buffer.byteLength(m, 'utf8') <= 4096, String(Buffer.byteLength(m, 'utf8')));
	assert.ok(m.startsWith('éé') && m.endsWith('…'));
	const { cutBytes } = require(dist('nodes/FlowgateTrigger/limits.js'));
	assert.strictEqual(cutBytes('abc', 3), 'abc');
	assert.strictEqual(Buffer.byteLength(cutBytes('🚑'.repeat(10), 10), 'utf8'), 7);
});

function webhookCtx({ body, headers, url = '/webhook/flowgate/email', secret = 'handler-secret-0123456789' }) {
	const answer = {};
	const logged = [];
	const res = { status(s) { answer.status = s; return this; }, json(b) { answer.body = b; return this; } };
	const raw = Buffer.from(body);
	const req = { method: 'POST', originalUrl: url, url, headers, rawBody: raw, body: JSON.parse(body) };
	return {
		answer,
		logged,
		ctx: {
			getRequestObject: () => req, getResponseObject: () => res, getCredentials: async () => ({ secret }),
			logger: { error: (m) => logged.push(m), warn() {}, info() {} },
		},
	};
}

const handlerSecret = 'handler-secret-0123456789';

// delivery signs body as flowgate's buffer does: X-Signature (version 2)
// and X-Buffer-Signature for message id and attempt.
function delivery(body, id, attempt, { timestamp, secret = handlerSecret } = {}) {
	const h = sig.sign(secret, { method: 'POST', target: '/webhook/flowgate/email', body, timestamp });
	return {
		'x-timestamp': h['X-Timestamp'], 'x-signature': h['X-Signature'], 'x-signature-version': '2',
		'x-buffer-message-id': id, 'x-buffer-attempt': String(attempt), 'x-buffer-type': 'email.send',
		'x-buffer-signature': sig.deliveryMAC(secret, h['X-Timestamp'], id, String(attempt), body),
	};
}

async function deliver(node, body, headers, opts) {
	const w = webhookCtx({ body, headers, ...opts });
	const out = await node.webhook.call(w.ctx);
	return { out, status: w.answer.status, reason: w.answer.body && w.answer.body.error.details.reason, answer: w.answer, logged: w.logged };
}

test('handler trigger: a signed delivery runs the workflow, anything else is refused 401', async () => {
	const node = new FlowgateHandlerTrigger();
	const body = '{"to":"Zoë@example.com"}';
	const headers = delivery(body, 'm1-' + Date.now(), 1);
	const ok = await deliver(node, body, headers);
	assert.deepStrictEqual(ok.out.workflowData[0][0].json, { messageId: headers['x-buffer-message-id'], type: 'email.send', attempt: 1, payload: { to: 'Zoë@example.com' } });
	const again = await deliver(node, body, headers);
	assert.deepStrictEqual(again.out, { noWebhookResponse: true });
	assert.strictEqual(again.status, 401);
	assert.strictEqual(again.reason, 'replayed');
	assert.deepStrictEqual(Object.keys(again.answer.body), ['success', 'error']);
	assert.strictEqual(again.answer.body.error.code, 'unauthorized');
	const forged = await deliver(node, '{"to":"x"}', { ...headers, 'x-buffer-attempt': '2' });
	assert.strictEqual(forged.reason, 'bad_signature');
	const bare = await deliver(node, body, {});
	assert.strictEqual(bare.reason, 'missing_headers');
});

test('handler trigger: two messages with one payload in one second are two deliveries', async () => {
	// Same body, same second: one X-Signature, both attempt 1. The replay
	// guard used to key on X-Signature + attempt and refuse the second
	// (401, which flowgate dead-letters).
	const node = new FlowgateHandlerTrigger();
	const body = '{"to":"same@example.com"}';
	const ts = Math.floor(Date.now() / 1000);
	const a = delivery(body, 'same-a-' + ts, 1, { timestamp: ts });
	const b = delivery(body, 'same-b-' + ts, 1, { timestamp: ts });
	assert.strictEqual(a['x-signature'], b['x-signature']);
	const first = await deliver(node, body, a);
	const second = await deliver(node, body, b);
	assert.strictEqual(first.out.workflowData[0][0].json.messageId, a['x-buffer-message-id']);
	assert.strictEqual(second.status, undefined, `the second message refused: ${second.status} ${second.reason}`);
	assert.strictEqual(second.out.workflowData[0][0].json.messageId, b['x-buffer-message-id']);
	// Its retry (attempt 2, signed anew by flowgate) is a new delivery too.
	const retry = await deliver(node, body, delivery(body, 'same-a-' + ts, 2, { timestamp: ts }));
	assert.strictEqual(retry.out.workflowData[0][0].json.attempt, 2);
});

test('handler trigger: X-Buffer-Signature is required and binds message id and attempt', async () => {
	const node = new FlowgateHandlerTrigger();
	const body = '{"to":"bind@example.com"}';
	const h = delivery(body, 'bind-' + Date.now(), 1);
	const { ['x-buffer-signature']: _, ...unsigned } = h;
	const missing = await deliver(node, body, unsigned);
	assert.strictEqual(missing.status, 401);
	assert.strictEqual(missing.reason, 'missing_headers');
	assert.match(missing.answer.body.error.message, /X-Buffer-Signature/);
	// A captured delivery resent as another attempt or another message.
	for (const forged of [{ 'x-buffer-attempt': '2' }, { 'x-buffer-message-id': 'forged' }, { 'x-buffer-signature': 'zz' },
		{ 'x-buffer-signature': sig.deliveryMAC('another-secret', h['x-timestamp'], h['x-buffer-message-id'], '1', body) }]) {
		const r = await deliver(node, body, { ...h, ...forged });
		assert.strictEqual(r.status, 401, JSON.stringify(forged));
		assert.strictEqual(r.reason, 'bad_signature', JSON.stringify(forged));
	}
	// None of them used the delivery up: the genuine one still runs, once.
	assert.ok((await deliver(node, body, h)).out.workflowData);
	assert.strictEqual((await deliver(node, body, h)).reason, 'replayed');
	// Upper-case hex is the same delivery.
	assert.strictEqual((await deliver(node, body, { ...h, 'x-buffer-signature': h['x-buffer-signature'].toUpperCase() })).reason, 'replayed');
});

test('handler trigger: an empty secret refuses every delivery (fails closed)', async () => {
	const node = new FlowgateHandlerTrigger();
	const body = '{"to":"nokey@example.com"}';
	// Signed with the empty key: what verify('') used to accept.
	const ts = String(Math.floor(Date.now() / 1000));
	const h = sig.sign('', { method: 'POST', target: '/webhook/flowgate/email', body, timestamp: ts });
	const crypto = require('crypto');
	const headers = { 'x-timestamp': ts, 'x-signature': h['X-Signature'], 'x-signature-version': '2', 'x-buffer-message-id': 'nokey', 'x-buffer-attempt': '1',
		'x-buffer-signature': crypto.createHmac('sha256', '').update(`${ts}\nnokey\n1\n${body}`).digest('hex') };
	for (const secret of ['', null]) {
		const r = await deliver(node, body, headers, { secret });
		assert.deepStrictEqual(r.out, { noWebhookResponse: true });
		assert.strictEqual(r.status, 500);
		assert.strictEqual(r.reason, 'no_secret');
		assert.match(r.answer.body.error.message, /no Handler Secret/);
		assert.strictEqual(r.logged.length, 1);
	}
	assert.throws(() => sig.verify('', { method: 'POST', target: '/x', headers, body }), /no secret/);
	assert.throws(() => sig.verifyDelivery('', { method: 'POST', target: '/x', headers, body }), /no secret/);
});
