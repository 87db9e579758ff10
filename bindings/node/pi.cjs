// `require("treelog/pi")`: the namespace of treelog's ES module (index.js), loaded with
// require(esm) (Node >= 20.19 or >= 22.12; it works because no module of the package uses
// top-level await). Types: pi.d.cts.
module.exports = require("./index.js");
