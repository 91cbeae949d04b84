// Package protocol holds the wire vocabulary of the Agent Host Protocol (AHP)
// as far as a changeset host speaks it: state, action, command and
// notification types with their JSON encodings, method names and error codes.
//
// Encoding rules, applied throughout:
//   - optional fields are omitted when absent, never written as null
//     (omitzero on slices and structs, pointers for optional scalars whose
//     zero value is meaningful, such as reviewed:false or added:0);
//   - unknown JSON keys are ignored when decoding;
//   - unknown action types decode into UnknownAction and re-encode verbatim;
//   - enum-like strings are plain strings, so unknown values round-trip.
//
// The package imports only the standard library so the pure core (reducer,
// uritemplate, changeset) builds without any transport code.
package protocol
