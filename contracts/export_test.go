package contracts

import "reflect"

// DecodeNumbers is DecodeJSON's Decoder path, which every value took
// before the json.Unmarshal path: FuzzDecodeJSONFastPath holds the two to
// each other.
var DecodeNumbers = decodeNumbers

// HoldsInterface is holdsInterface for v's type.
func HoldsInterface(v any) bool { return holdsInterface(reflect.TypeOf(v)) }
