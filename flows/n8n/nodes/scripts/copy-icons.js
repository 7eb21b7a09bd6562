// Copies the nodes' and credentials' icons (*.svg) into dist/ beside the
// compiled files, where n8n's "file:" icon paths look for them (what the
// n8n starter's gulp task does, without gulp).
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
for (const top of ['nodes', 'credentials']) {
	const walk = (dir) => {
		for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
			const p = path.join(dir, e.name);
			if (e.isDirectory()) {
				walk(p);
			} else if (/\.(svg|png)$/.test(e.name)) {
				const to = path.join(root, 'dist', path.relative(root, p));
				fs.mkdirSync(path.dirname(to), { recursive: true });
				fs.copyFileSync(p, to);
			}
		}
	};
	if (fs.existsSync(path.join(root, top))) walk(path.join(root, top));
}
