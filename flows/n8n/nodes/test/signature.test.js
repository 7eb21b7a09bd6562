// The signature: the palette's scheme byte for byte (the Go test
// TestN8nNodesSignsLikeGo checks it against flowgate's own verifier), and
// the handler verifier's refusals.
const test = require('node:test');
const assert = require('node:assert');
const crypto = require('crypto');
const { dist } = require('./helpers');

const sig = require(dist('nodes/Flowgate/signature.js'));
const palette = require('../../../node-red/palette/lib/flowgate.js');

const secret = 'unit-test-secret-0123456789';

test('signs as node-red-contrib-flowgate does, versions 1 and 2', () => {
	const cases = [
		{ timestamp: 1764000000, method: 'post', target: '/queue/claim', body: '{"worker_id":"w","nonce":"Zoë 🚑"}', version: '2' },
		{ timestamp: 1764000000, method: 'GET', target: '/queue/abc?nonce=x', body: '', version: '2' },
		{ timestamp: 1764000000, body: Buffer.from('{"a":1}'), version: '1' },
	];
	for (const c of cases) {
		assert.deepStrictEqual(sig.sign(secret, c), palette.sign(secret, c));
	}
	const want = crypto.createHmac('sha256', secret).update('1764000000.POST /ack.{}').digest('hex');
	assert.deepStrictEqual(sig.sign(secret, { timestamp: 1764000000, method: 'POST', target: '/ack', body: '{}' }),
		{ 'X-Timestamp': '1764000000', 'X-Signature': want, 'X-Signature-Version': '2' });
});

test('nonces differ', () => {
	assert.notStrictEqual(sig.nonce(), sig.nonce());
});

test('verify: accepts once, refuses with flowgate\'s reasons', () => {
	const now = 1764000000 * 1000;
	const body = Buffer.from('{"to":"a@example.com"}');
	const h = sig.sign(secret, { timestamp: 1764000000, method: 'POST', target: '/webhook/flowgate/email', body });
	const headers = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
	const req = { method: 'POST', target: '/webhook/flowgate/email', headers, body };
	const replay = new sig.ReplayCache(600000);
	assert.strictEqual(sig.verify(secret, req, replay, '1', now), null);
	assert.strictEqual(sig.verify(secret, req, replay, '1', now).reason, 'replayed');
	assert.strictEqual(sig.verify(secret, req, replay, '2', now), null, 'another attempt is not a replay');
	assert.strictEqual(sig.verify(secret, { ...req, target: '/webhook/other' }, undefined, '', now).reason, 'bad_signature');
	assert.strictEqual(sig.verify(secret, { ...req, body: Buffer.from('{}') }, undefined, '', now).reason, 'bad_signature');
	assert.strictEqual(sig.verify(secret, req, undefined, '', now + 301000).reason, 'expired');
	assert.strictEqual(sig.verify(secret, { ...req, headers: {} }, undefined, '', now).reason, 'missing_headers');
	assert.strictEqual(sig.verify(secret, { ...req, headers: { ...headers, 'x-signature-version': '3' } }, undefined, '', now).reason, 'bad_version');
	assert.strictEqual(sig.verify(secret, { ...req, headers: { ...headers, 'x-signature': 'zz' } }, undefined, '', now).reason, 'malformed_signature');
	assert.strictEqual(sig.verify('another-secret', req, undefined, '', now).reason, 'bad_signature');
});

test("deliveryMAC: flowgate's hmacsig.DeliveryMAC (its fixed vector)", () => {
	assert.strictEqual(sig.deliveryMAC('s3cret', '1700000000', 'm-1', '2', '{"a":1}'), '219787482cb65054b9ded803de564fff181c7db29079c8418232455475f2996b');
	assert.strictEqual(sig.deliveryMAC('s3cret', '1700000000', 'm-1', '2', Buffer.from('{"a":1}')), '219787482cb65054b9ded803de564fff181c7db29079c8418232455475f2996b');
	assert.notStrictEqual(sig.deliveryMAC('s3cret', '1700000000', 'm-1', '3', '{"a":1}'), sig.deliveryMAC('s3cret', '1700000000', 'm-1', '2', '{"a":1}'));
	assert.throws(() => sig.deliveryMAC('', '1700000000', 'm-1', '2', ''), /no secret/);
});

test('verifyDelivery: X-Signature, then X-Buffer-Signature, each delivery once', () => {
	const now = 1764000000 * 1000;
	const body = Buffer.from('{"to":"a@example.com"}');
	const signed = (id, attempt) => {
		const h = sig.sign(secret, { timestamp: 1764000000, method: 'POST', target: '/webhook/h', body });
		return { 'x-timestamp': h['X-Timestamp'], 'x-signature': h['X-Signature'], 'x-signature-version': '2', 'x-buffer-message-id': id, 'x-buffer-attempt': attempt,
			'x-buffer-signature': sig.deliveryMAC(secret, h['X-Timestamp'], id, attempt, body) };
	};
	const req = (headers) => ({ method: 'POST', target: '/webhook/h', headers, body });
	const replay = new sig.ReplayCache(600000);
	const a1 = signed('a', '1');
	assert.strictEqual(sig.verifyDelivery(secret, req(a1), replay, now), null);
	assert.strictEqual(sig.verifyDelivery(secret, req(a1), replay, now).reason, 'replayed');
	assert.strictEqual(sig.verifyDelivery(secret, req(signed('b', '1')), replay, now), null, 'another message, same X-Signature');
	assert.strictEqual(sig.verifyDelivery(secret, req(signed('a', '2')), replay, now), null, 'a retry');
	assert.strictEqual(sig.verifyDelivery(secret, req({ ...a1, 'x-buffer-attempt': '3' }), replay, now).reason, 'bad_signature');
	assert.strictEqual(sig.verifyDelivery(secret, req({ ...a1, 'x-buffer-message-id': 'z' }), replay, now).reason, 'bad_signature');
	assert.strictEqual(sig.verifyDelivery(secret, req({ ...a1, 'x-buffer-signature': 'sha256=' + a1['x-buffer-signature'] }), replay, now).reason, 'bad_signature');
	const { 'x-buffer-signature': _, ...bare } = a1;
	assert.strictEqual(sig.verifyDelivery(secret, req(bare), replay, now).reason, 'missing_headers');
	assert.strictEqual(sig.verifyDelivery(secret, req({ ...a1, 'x-signature': 'f'.repeat(64) }), replay, now).reason, 'bad_signature', 'X-Signature first');
	assert.strictEqual(sig.verifyDelivery(secret, req(a1), undefined, now + 301000).reason, 'expired');
});
