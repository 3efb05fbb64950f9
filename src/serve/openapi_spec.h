// The service's OpenAPI 3 description (docs/openapi.json, compiled in): every route, its request
// and response schemas and its error statuses. tests/unit/serve/test_service.cpp holds it to the
// routes and body fields the service really has.
#pragma once

#include <string>

namespace sieve::serve {

/// The JSON text of docs/openapi.json.
const std::string& openapi_spec();

}  // namespace sieve::serve
