// Fakes of n8n's node contexts for the unit tests: an httpRequest that
// records each request and answers from a handler, and the parameters a
// node reads. The tests require the compiled package (dist/, test/build).
const path = require('path');

const dist = (p) => path.join(__dirname, '..', 'dist', p);

/** fakeHttp records requests ({method, url, headers, body}) and answers handler(req) → {status, body, headers}. */
function fakeHttp(handler) {
	const requests = [];
	return {
		requests,
		async httpRequest(o) {
			const req = { method: o.method, url: o.url, headers: o.headers || {}, body: o.body };
			requests.push(req);
			const a = (await handler(req)) || { status: 200, body: {} };
			return { statusCode: a.status, headers: a.headers || {}, body: a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body) };
		},
	};
}

/** An IExecuteFunctions for items and params (an object, or a function of the item index). */
function executeContext({ params, items = [{ json: {} }], creds, http, continueOnFail = false }) {
	const p = typeof params === 'function' ? params : () => params;
	return {
		getInputData: () => items,
		getNodeParameter: (name, i, fallback) => {
			const v = p(i)[name];
			return v === undefined ? fallback : v;
		},
		getCredentials: async () => creds,
		getNode: () => ({ name: 'Flowgate', type: 'n8n-nodes-flowgate.flowgate', typeVersion: 1, parameters: {} }),
		getWorkflow: () => ({ id: 'wf1' }),
		continueOnFail: () => continueOnFail,
		helpers: http,
	};
}

module.exports = { dist, fakeHttp, executeContext };
