# node-gyp's build of the addon (`npm install` from source): every .cc under
# native/, with the standard, flags, defines and libraries of
# native/build.json, which CMakeLists.txt reads too. test/native/gyp.test.ts
# checks that the two builds compile the same files with the same flags and
# runs a job on this one.
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
      "defines": ["<!@(node -p \"require('./native/build.json').addonDefines.join(' ')\")"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": [
        "-std=c++<!(node -p \"require('./native/build.json').cxxStandard\")",
        "<!@(node -p \"const b=require('./native/build.json'); [...b.flags, ...b.addonFlags].join(' ')\")"
      ],
      "libraries": ["<!@(node -p \"require('./native/build.json').libraries.join(' ')\")"]
    }
  ]
}
