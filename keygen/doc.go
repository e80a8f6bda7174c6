// Package keygen makes and checks the CURVE certificate that all brokers of a Flux instance
// share, in the text format flux-core's `flux keygen` writes and its broker reads.
//
// The keys are an X25519 (Curve25519) pair from crypto/ecdh with a secret from crypto/rand,
// Z85-encoded (ZeroMQ RFC 32): the same thing libzmq's zmq_curve_keypair makes, without cgo
// or a ZeroMQ library. The file is ZPL (ZeroMQ RFC 4) restricted the way flux-core's
// reader (src/common/libzmqutil/cert.c) restricts it:
//
//	#  ZeroMQ CURVE **Secret** Certificate
//	#  DO NOT DISTRIBUTE
//
//	metadata
//	    name = "flux-sample"
//	    keygen.hostname = "flux-sample-keygen-x7k2p"
//	curve
//	    public-key = "<40 Z85 characters>"
//	    secret-key = "<40 Z85 characters>"
//
// Parse applies the reader's rules and says which one a file breaks.
package keygen
