// Package webapp is a second deliberately flawed platform for evaluating
// fleetd's crawl, passive checks, docs-as-contract checks and call-endpoint
// grammar on a platform written unlike the testbed: "Bazaar", a shop
// directory served over HTTPS with query-parameter faces
// (/view?shop=NAME), nested HTML docs, a markdown quickstart with curl
// examples, a JSON API with paginated links, a JavaScript bundle holding
// the API's URLs, a sitemap behind robots.txt and a search form. The shops
// are names in a NameRegistry (chain/contracts' reference implementation)
// deployed on the chain it is given, their title and tagline in metadata.
//
// Serve runs it in one of two modes. Flawed plants one flaw per row of
// README.md; Correct is its twin, the same platform with every flaw fixed
// and every decoy kept, on which a probe must find nothing. The flaws are
// of the classes fleetd's web checks cover; nothing in fleetd may know them
// (layout_test.go keeps this package out of production code). Never expose
// it beyond loopback: Serve listens on 127.0.0.1 only.
package webapp
