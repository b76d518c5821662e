//! A scripted stand-in of the model API on loopback (`POST /v1/messages`, SSE
//! streaming, real-looking usage, tool_use blocks and the API's real error
//! bodies), so the real `claude` CLI can be driven without a network or an
//! account — by the tests and by `hoop demo`.
