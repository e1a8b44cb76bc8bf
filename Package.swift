// swift-tools-version: 6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
    // Release builds skip the dynamic exclusivity checks (as the standard library itself is
    // built): callgrind counted ~6,000 instructions per proxied request in swift_beginAccess
    // and its thread-local access set, 14 % of the request. Debug builds, and so every test
    // run, keep the checks and trap on a violation.
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "Airlock",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "airlock", targets: ["airlock"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        // C system libraries: module maps and static-inline shims only.
        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent",
            providers: [.apt(["libevent-dev"])]
        ),
        .systemLibrary(
            name: "CLiburing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The process's allocator (AirlockIO's Allocator): linked, it replaces glibc's malloc.
        .systemLibrary(
            name: "CMimalloc",
            providers: [.apt(["libmimalloc-dev"])]
        ),
        .systemLibrary(
            name: "CLibYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),

        // Pure modules: no I/O, no C.
        .target(name: "AirlockWire", swiftSettings: strict),
        .target(name: "AirlockSerialization", dependencies: ["AirlockWire"], swiftSettings: strict),
        .target(name: "AirlockSecurity", dependencies: ["AirlockWire"], swiftSettings: strict),

        // The only module that touches C.
        .target(name: "AirlockIO", dependencies: ["AirlockWire", "CLibevent", "COpenSSL", "CLiburing", "CMimalloc"], swiftSettings: strict),

        .target(name: "AirlockSession", dependencies: ["AirlockWire"], swiftSettings: strict),

        // YAML documents composed into nodes with libyaml (no I/O): the one file that imports
        // CLibYAML turns its events into nodes and its errors into YAMLError on the spot.
        // Neither it nor AirlockConfig imports Foundation (bench/README.md, "Footprint").
        .target(name: "AirlockYAML", dependencies: ["CLibYAML"], swiftSettings: strict),

        // The YAML configuration: reading, validation, defaults, rendering. Pure (no AirlockIO):
        // the gateway opens the files it names (Airlock's OpenedConfig).
        .target(
            name: "AirlockConfig",
            dependencies: ["AirlockWire", "AirlockSerialization", "AirlockSecurity", "AirlockYAML"],
            swiftSettings: strict
        ),

        .target(
            name: "Airlock",
            dependencies: [
                "AirlockWire", "AirlockSerialization", "AirlockSecurity", "AirlockIO", "AirlockSession", "AirlockConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "airlock",
            dependencies: [
                "Airlock", "AirlockConfig",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),

        // Test support: real origins on 127.0.0.1:0, a curl runner.
        .target(name: "AirlockTesting", dependencies: ["Airlock"], swiftSettings: strict),

        .testTarget(name: "AirlockWireTests", dependencies: ["AirlockWire"], swiftSettings: strict),
        .testTarget(name: "AirlockSerializationTests", dependencies: ["AirlockSerialization", "AirlockWire"], swiftSettings: strict),
        .testTarget(name: "AirlockSecurityTests", dependencies: ["AirlockSecurity", "AirlockTesting"], swiftSettings: strict),
        .testTarget(name: "AirlockIOTests", dependencies: ["AirlockIO", "AirlockTesting"], swiftSettings: strict),
        .testTarget(name: "AirlockSessionTests", dependencies: ["AirlockSession", "AirlockWire"], swiftSettings: strict),
        .testTarget(name: "AirlockYAMLTests", dependencies: ["AirlockYAML"], swiftSettings: strict),
        .testTarget(
            name: "AirlockConfigTests",
            dependencies: ["AirlockConfig", "AirlockSecurity", "AirlockSerialization"],
            swiftSettings: strict
        ),
        .testTarget(name: "AirlockTests", dependencies: ["Airlock", "AirlockConfig", "AirlockTesting"], swiftSettings: strict),
        .testTarget(
            name: "AirlockIntegrationTests",
            dependencies: ["Airlock", "AirlockTesting", "AirlockWire"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
