// The transport seam speaks swift-http-types (HTTPFields, HTTPRequest.Method): whoever
// imports Courier can write or wrap a transport without importing it.
@_exported import HTTPTypes
