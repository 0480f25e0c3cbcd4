#!/bin/sh
# prebuildify passes node-gyp style flags (rebuild --target=... --arch=...) that
# cmake-js would read as CMake targets; drop them and build the N-API addon.
exec npx cmake-js rebuild --log-level warn
