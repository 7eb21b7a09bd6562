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

async function trigger(tasks, params) {
	const queue = [...tasks];
	const http = fakeHttp(async (req) => {
		const path = new URL(req.url).pathname;
		if (path === '/queue/claim') {
			if (queue.length) return { status: 200, body: { success: true, tasks: [queue.shift()] } };
			await new Promise((r) => setTimeout(r, 20));
			return { status: 204 };
		}
		return { status: 200, body: { success: true } };
	});
	const emitted = [];
	const ctx = {
		getCredentials: async () => creds,
		getNodeParameter: (name, fallback) => (params[name] === undefined ? fallback : params[name]),
		getWorkflow: () => ({ id: 'wf7' }),
		getMode: () => 'trigger',
		getNode: () => ({ name: 'Flowgate Trigger' }),
		logger: { warn() {}, error() {}, info() {} },
		helpers: { ...http, createDeferredPromise: deferred },
		emit: (data, _resp, done) => emitted.push({ data, done }),
	};
	const res = await new FlowgateTrigger().trigger.call(ctx);
	return { http, emitted, res };
}

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

function webhookCtx({ body, headers, url = '/webhook/flowgate/email' }) {
	const answer = {};
	const res = { status(s) { answer.status = s; return this; }, json(b) { answer.body = b; return this; } };
	const raw = Buffer.from(body);
	const req = { method: 'POST', originalUrl: url, url, headers, rawBody: raw, body: JSON.parse(body) };
	return {
		answer,
		ctx: { getRequestObject: () => req, getResponseObject: () => res, getCredentials: async () => ({ secret: 'handler-secret-0123456789' }) },
	};
}

test('handler trigger: a signed delivery runs the workflow, anything else is refused 401', async () => {
	const node = new FlowgateHandlerTrigger();
	const body = '{"to":"Zoë@example.com"}';
	const h = sig.sign('handler-secret-0123456789', { method: 'POST', target: '/webhook/flowgate/email', body });
	const headers = { 'x-timestamp': h['X-Timestamp'], 'x-signature': h['X-Signature'], 'x-signature-version': '2',
		'x-buffer-message-id': 'm1', 'x-buffer-attempt': '1', 'x-buffer-type': 'email.send' };
	const ok = webhookCtx({ body, headers });
	const out = await node.webhook.call(ok.ctx);
	assert.deepStrictEqual(out.workflowData[0][0].json, { messageId: 'm1', type: 'email.send', attempt: 1, payload: { to: 'Zoë@example.com' } });
	const again = webhookCtx({ body, headers });
	assert.deepStrictEqual(await again.ctx && await node.webhook.call(again.ctx), { noWebhookResponse: true });
	assert.strictEqual(again.answer.status, 401);
	assert.strictEqual(again.answer.body.error.details.reason, 'replayed');
	const forged = webhookCtx({ body: '{"to":"x"}', headers: { ...headers, 'x-buffer-attempt': '2' } });
	await node.webhook.call(forged.ctx);
	assert.strictEqual(forged.answer.body.error.details.reason, 'bad_signature');
	const bare = webhookCtx({ body, headers: {} });
	await node.webhook.call(bare.ctx);
	assert.strictEqual(bare.answer.body.error.details.reason, 'missing_headers');
});
