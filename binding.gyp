# node-gyp's build of the addon (`npm install` from source): the same
# sources, flags and defines as CMakeLists.txt (NODEMPI_FLAGS,
# NODEMPI_ADDON_FLAGS, NODEMPI_ADDON_DEFINES), which test/native/gyp.test.ts
# checks before building this file and running a job on the result.
{
  "targets": [
    {
      "target_name": "nodempi",
      "sources": [
        "<!@(node -p \"require('fs').readdirSync('native',{recursive:true}).filter(f=>f.endsWith('.cc')).sort().map(f=>'native/'+f).join(' ')\")"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "native"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-O3", "-ffp-contract=off", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"],
      "libraries": ["-lrt", "-ldl", "-lpthread"]
    }
  ]
}
