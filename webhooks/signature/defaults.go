package signature

// DefaultMinVersion is the oldest signature version accepted by default:
// 1, the seed's timestamp.body scheme.
const DefaultMinVersion = 1
