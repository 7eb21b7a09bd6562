// n8n loads this package's nodes from package.json's "n8n" section; nothing is exported here.
module.exports = {};
