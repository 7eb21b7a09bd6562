// The Flowgate node: each operation's request (method, path, body, auth)
// and its output items, against a fake flowgate.
const test = require('node:test');
const assert = require('node:assert');
const { dist, fakeHttp, executeContext } = require('./helpers');

const { Flowgate } = require(dist('nodes/Flowgate/Flowgate.node.js'));
const sig = require(dist('nodes/Flowgate/signature.js'));

const creds = { baseUrl: 'http://flowgate.test:8080/', hmacSecret: 'unit-test-secret-0123456789', bufferToken: 'buf-token' };
const node = new Flowgate();

async function run(params, answer, more = {}) {
	const http = fakeHttp(answer || (() => ({ status: 200, body: { success: true } })));
	const ctx = executeContext({ params, creds, http, ...more });
	const out = await node.execute.call(ctx);
	return { out: out[0], requests: http.requests };
}

// signedOK checks a request's version-2 signature with the verifier.
function signedOK(r) {
	const u = new URL(r.url);
	const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
	return sig.verify(creds.hmacSecret, { method: r.method, target: u.pathname + u.search, headers, body: r.body || '' });
}

test('task create: POST /queue, signed v2, a nonce in the body', async () => {
	const { out, requests } = await run({ resource: 'task', operation: 'create', encounterId: 'enc-1', payload: '{"n":1}', createOptions: { priority: 'HIGH', maxAttempts: 2 } },
		() => ({ status: 201, body: { success: true, task: { queue_id: 'q1' } } }));
	assert.strictEqual(requests[0].method, 'POST');
	assert.strictEqual(requests[0].url, 'http://flowgate.test:8080/queue');
	const b = JSON.parse(requests[0].body);
	assert.deepStrictEqual({ ...b, nonce: undefined }, { encounter_id: 'enc-1', payload: { n: 1 }, priority: 'HIGH', max_attempts: 2, nonce: undefined });
	assert.match(b.nonce, /^[0-9a-f-]{36}$/);
	assert.strictEqual(requests[0].headers['X-Signature-Version'], '2');
	assert.strictEqual(signedOK(requests[0]), null);
	assert.strictEqual(out[0].json.task.queue_id, 'q1');
});

test('task claim: one item per task, none on 204', async () => {
	let n = 0;
	const answer = () => (n++ === 0 ? { status: 200, body: { success: true, tasks: [{ queue_id: 'a' }, { queue_id: 'b' }] } } : { status: 204 });
	const params = { resource: 'task', operation: 'claim', workerId: '', limit: 2, waitMs: 100 };
	const first = await run(params, answer);
	assert.deepStrictEqual(first.out.map((i) => i.json.queue_id), ['a', 'b']);
	const b = JSON.parse(first.requests[0].body);
	assert.strictEqual(b.worker_id, 'n8n-wf1');
	assert.strictEqual(b.wait_ms, 100);
	const second = await run(params, answer);
	assert.deepStrictEqual(second.out, []);
});

test('task get: a signed GET carries its nonce in the query', async () => {
	const { out, requests } = await run({ resource: 'task', operation: 'get', queueId: 'q 1' }, () => ({ status: 200, body: { queue_id: 'q 1', status: 'DONE' } }));
	assert.match(requests[0].url, /^http:\/\/flowgate\.test:8080\/queue\/q%201\?nonce=[0-9a-f-]{36}$/);
	assert.strictEqual(requests[0].body, undefined);
	assert.strictEqual(signedOK(requests[0]), null);
	assert.strictEqual(out[0].json.status, 'DONE');
});

test('ack, fail, heartbeat, requeue: their routes and bodies', async () => {
	const ok = () => ({ status: 200, body: { success: true, task: { queue_id: 'q1' } } });
	const cases = [
		[{ operation: 'ack', queueId: 'q1', reportEncounterId: 'e1', workerId: 'w', experityActions: '{"done":true}' }, 'POST', '/ack', { queue_id: 'q1', encounter_id: 'e1', worker_id: 'w', experityActions: { done: true } }],
		[{ operation: 'fail', queueId: 'q1', reportEncounterId: 'e1', workerId: '', errorMessage: 'disk full' }, 'POST', '/fail', { queue_id: 'q1', encounter_id: 'e1', error_message: 'disk full' }],
		[{ operation: 'heartbeat', queueId: 'q1', workerId: 'w' }, 'POST', '/queue/q1/heartbeat', { worker_id: 'w' }],
		[{ operation: 'requeue', queueId: 'q1', requeuePriority: 'LOW' }, 'PATCH', '/queue/q1/requeue', { priority: 'LOW' }],
	];
	for (const [params, method, path, body] of cases) {
		const { requests } = await run({ resource: 'task', ...params }, ok);
		assert.strictEqual(requests[0].method, method);
		assert.strictEqual(new URL(requests[0].url).pathname, path);
		const b = JSON.parse(requests[0].body);
		delete b.nonce;
		assert.deepStrictEqual(b, body, path);
		assert.strictEqual(signedOK(requests[0]), null, path);
	}
});

test('signature version 1 on create, ACK, FAIL when the credentials choose it', async () => {
	const http = fakeHttp(() => ({ status: 200, body: {} }));
	const ctx = executeContext({ params: { resource: 'task', operation: 'ack', queueId: 'q', reportEncounterId: 'e', experityActions: '{}' }, creds: { ...creds, signatureVersion: '1' }, http });
	await node.execute.call(ctx);
	assert.strictEqual(http.requests[0].headers['X-Signature-Version'], undefined);
	const h = sig.sign(creds.hmacSecret, { timestamp: http.requests[0].headers['X-Timestamp'], body: http.requests[0].body, version: '1' });
	assert.strictEqual(http.requests[0].headers['X-Signature'], h['X-Signature']);
});

test('buffer: enqueue with the bearer token, get, list', async () => {
	const e = await run({ resource: 'bufferMessage', operation: 'enqueue', messageType: 'email.send', payload: '{"to":"a"}', enqueueOptions: { priority: 1, idempotencyKey: 'k' } },
		() => ({ status: 202, body: { success: true, messageId: 'm1' } }));
	assert.strictEqual(e.requests[0].headers.Authorization, 'Bearer buf-token');
	assert.strictEqual(e.requests[0].headers['X-Signature'], undefined);
	assert.deepStrictEqual(JSON.parse(e.requests[0].body), { type: 'email.send', payload: { to: 'a' }, priority: 1, idempotencyKey: 'k' });
	assert.strictEqual(e.out[0].json.messageId, 'm1');
	const g = await run({ resource: 'bufferMessage', operation: 'get', messageId: 'm1' }, () => ({ status: 200, body: { messageId: 'm1', state: 'completed' } }));
	assert.strictEqual(g.requests[0].url, 'http://flowgate.test:8080/api/buffer/messages/m1');
	const l = await run({ resource: 'bufferMessage', operation: 'list', state: 'dead', listFilters: { type: 'email.send', limit: 5 } },
		() => ({ status: 200, body: { messages: [{ messageId: 'a' }, { messageId: 'b' }] } }));
	assert.strictEqual(l.requests[0].url, 'http://flowgate.test:8080/api/buffer/messages?state=dead&type=email.send&limit=5');
	assert.deepStrictEqual(l.out.map((i) => i.json.messageId), ['a', 'b']);
});

test('hold: create, heartbeat, release, unsigned', async () => {
	const c = await run({ resource: 'hold', operation: 'create', appointmentTypeId: 't', slotStartDate: '2026-12-01T09:00:00Z', clientId: 'c1', specialistId: '' },
		() => ({ status: 201, body: { holdId: 'h1', holdRef: 'r1' } }));
	assert.deepStrictEqual(JSON.parse(c.requests[0].body), { appointmentTypeId: 't', slotStartDate: '2026-12-01T09:00:00Z', clientId: 'c1' });
	assert.strictEqual(c.requests[0].headers['X-Signature'], undefined);
	assert.strictEqual(c.out[0].json.holdId, 'h1');
	const h = await run({ resource: 'hold', operation: 'heartbeat', holdId: 'h1', clientId: 'c1' }, () => ({ status: 200, body: { ok: true } }));
	assert.strictEqual(h.requests[0].method, 'PATCH');
	assert.deepStrictEqual(JSON.parse(h.requests[0].body), { holdId: 'h1', clientId: 'c1' });
	const r = await run({ resource: 'hold', operation: 'release', holdId: 'h1', clientId: 'c1' }, () => ({ status: 200, body: { released: true } }));
	assert.strictEqual(r.requests[0].method, 'DELETE');
	assert.strictEqual(r.requests[0].url, 'http://flowgate.test:8080/v1/holds/h1?clientId=c1');
	assert.strictEqual(r.out[0].json.released, true);
});

test('hold: an error names the hold by its public ref, never its id (a bearer secret)', async () => {
	const holdId = '0123456789abcdef0123456789abcdef';
	// holds.Ref: "ref-" + SHA-256("flowgate holds: public ref\x00" + id), 128 bits
	const ref = 'ref-' + require('crypto').createHash('sha256').update('flowgate holds: public ref\x00' + holdId).digest('hex').slice(0, 32);
	const answers = [
		() => ({ status: 409, body: { success: false, error: { code: 'conflict', message: 'hold is not live' } } }),
		() => ({ status: 500, body: 'internal error for /v1/holds/' + holdId }),
		() => { throw Object.assign(new Error('connect ECONNREFUSED, DELETE http://flowgate.test:8080/v1/holds/' + holdId + '?clientId=c1'), { code: 'ECONNREFUSED' }); },
	];
	for (const answer of answers) {
		for (const op of ['release', 'heartbeat']) {
			const { out } = await run({ resource: 'hold', operation: op, holdId, clientId: 'client-42' }, answer, { continueOnFail: true });
			const e = out[0].json.error;
			assert.ok(!JSON.stringify(e).includes(holdId), `${op}: ${JSON.stringify(e)}`);
			if (op === 'release') assert.match(e.message, new RegExp('^DELETE /v1/holds/' + ref + ': '));
			await assert.rejects(run({ resource: 'hold', operation: op, holdId, clientId: 'client-42' }, answer),
				(err) => !String(err.message).includes(holdId) && !JSON.stringify(err).includes(holdId));
		}
	}
	const { holdRef } = require(dist('nodes/Flowgate/GenericFunctions.js'));
	assert.strictEqual(holdRef(holdId), ref);
});

test("flowgate's error envelope: a NodeApiError, or an error item with Continue On Fail", async () => {
	const refuse = () => ({ status: 409, body: { success: false, error: { code: 'conflict', message: 'task is DONE', details: { current_status: 'DONE' } } } });
	const params = { resource: 'task', operation: 'heartbeat', queueId: 'q1', workerId: 'w' };
	await assert.rejects(run(params, refuse), (e) => e.name === 'NodeApiError' && /409 conflict: task is DONE/.test(e.message));
	const { out } = await run(params, refuse, { continueOnFail: true });
	assert.deepStrictEqual(out[0].json.error, { message: 'POST /queue/q1/heartbeat: 409 conflict: task is DONE', code: 'conflict', status: 409, details: { current_status: 'DONE' } });
});

test('the package lists every node and credential it builds', () => {
	const pkg = require('../package.json');
	const names = pkg.n8n.nodes.map((f) => Object.values(require('../' + f))[0]).map((C) => new C().description.name);
	assert.deepStrictEqual(names, ['flowgate', 'flowgateTrigger', 'flowgateHandlerTrigger']);
	const creds = pkg.n8n.credentials.map((f) => Object.values(require('../' + f))[0]).map((C) => new C().name);
	assert.deepStrictEqual(creds, ['flowgateApi', 'flowgateHandlerApi']);
});
