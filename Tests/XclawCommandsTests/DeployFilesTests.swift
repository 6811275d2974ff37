import ArgumentParser
import Foundation
import XCTest
import XclawBase

@testable import XclawCommands

/// The deployment files (`deploy/`) parse and name what a worker needs, and every xclaw command line they run is one
/// this xclaw accepts (parsed by its own command tree, not matched as text). No cluster, container engine or systemd
/// runs here: the manifests are read with PyYAML (Debian's python3-yaml), the unit with Python's configparser, the
/// container definition line by line.
final class DeployFilesTests: XCTestCase {
    private static let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy")

    /// Every YAML document of `deploy/kubernetes`, as JSON values, with the file it came from.
    private func manifests() throws -> [[String: Any]] {
        let script = """
            import json, pathlib, sys, yaml
            docs = []
            for path in sorted(pathlib.Path(sys.argv[1]).glob("*.yaml")):
                for doc in yaml.safe_load_all(path.read_text()):
                    if doc is not None:
                        doc["_file"] = path.name
                        docs.append(doc)
            print(json.dumps(docs))
            """
        let outcome = try Subprocess.run(
            ["/usr/bin/python3", "-c", script, Self.deploy.appendingPathComponent("kubernetes").path],
            timeout: .seconds(60))
        XCTAssertEqual(
            outcome.ending, .exited(0),
            "PyYAML failed (scripts/install-deps.sh installs python3-yaml): "
                + String(decoding: outcome.stderr, as: UTF8.self))
        return try JSONSerialization.jsonObject(with: outcome.stdout) as? [[String: Any]] ?? []
    }

    /// The one document of `kind` named `name`.
    private func document(_ docs: [[String: Any]], _ kind: String, _ name: String) throws -> [String: Any] {
        let found = docs.filter {
            $0["kind"] as? String == kind && ($0["metadata"] as? [String: Any])?["name"] as? String == name
        }
        XCTAssertEqual(found.count, 1, "one \(kind) \(name)")
        return try XCTUnwrap(found.first)
    }

    /// The first container of a Deployment's or a Job's pod template.
    private func container(_ doc: [String: Any]) throws -> [String: Any] {
        let spec = try XCTUnwrap(doc["spec"] as? [String: Any])
        let template = try XCTUnwrap(spec["template"] as? [String: Any])
        let pod = try XCTUnwrap(template["spec"] as? [String: Any])
        return try XCTUnwrap((pod["containers"] as? [[String: Any]])?.first)
    }

    /// Asserts that `command` (`/usr/local/bin/xclaw` then its arguments) is a command line xclaw accepts.
    private func assertXclawAccepts(_ command: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(command.first, "/usr/local/bin/xclaw", "\(command)", file: file, line: line)
        XCTAssertNoThrow(try Xclaw.parseAsRoot(Array(command.dropFirst())), "\(command)", file: file, line: line)
    }

    /// The container's ENTRYPOINT, as a JSON array.
    private func entrypoint() throws -> [String] {
        let text = try String(
            contentsOf: Self.deploy.appendingPathComponent("container/Containerfile"), encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").last { $0.hasPrefix("ENTRYPOINT ") })
        return try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(line.dropFirst("ENTRYPOINT ".count).utf8)) as? [String])
    }

    func testTheContainerIsDebian12WithWhatAWorkerNeeds() throws {
        let text = try String(
            contentsOf: Self.deploy.appendingPathComponent("container/Containerfile"), encoding: .utf8)
        let froms = text.split(separator: "\n").filter { $0.hasPrefix("FROM ") }
        XCTAssertEqual(froms.count, 2, "a build stage and a runtime stage")
        XCTAssertTrue(froms.last?.contains("debian:12") ?? false, "the runtime is Debian 12: \(froms)")
        XCTAssertTrue(froms.first?.contains("bookworm") ?? false, "the build is Debian 12 too: \(froms)")
        for package in ["xvfb", "tesseract-ocr-eng", "fonts-dejavu-core", "libpq5", "libtesseract5", "libcurl4"] {
            XCTAssertTrue(text.contains(" \(package) ") || text.contains(" \(package)\n"), "installs \(package)")
        }
        // The build stage installs the -dev packages the build needs: the same ones scripts/install-deps.sh names.
        let deps = try String(
            contentsOf: Self.deploy.deletingLastPathComponent().appendingPathComponent("scripts/install-deps.sh"),
            encoding: .utf8)
        let devs = Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).filter { $0.hasSuffix("-dev") })
        XCTAssertFalse(devs.isEmpty)
        for dev in devs { XCTAssertTrue(deps.contains(dev), "\(dev) is not in scripts/install-deps.sh") }
        for product in ["xclaw", "xclaw-core", "xclaw-atspi"] {
            XCTAssertTrue(text.contains("--product \(product)"), "builds \(product)")
        }
        XCTAssertEqual(try entrypoint(), ["/usr/local/bin/xclaw", "daemon", "run", "--worker"])
        assertXclawAccepts(try entrypoint())
        XCTAssertTrue(text.contains("STOPSIGNAL SIGTERM"))
    }

    func testTheManifestsNameWhatAWorkerNeeds() throws {
        let docs = try manifests()
        XCTAssertEqual(
            Set(docs.compactMap { $0["kind"] as? String }), ["Secret", "Job", "Deployment", "Service"],
            "\(docs.map { $0["_file"] ?? "?" })")
        let secret = try document(docs, "Secret", "xclaw")
        let keys = Set(((secret["stringData"] as? [String: Any]) ?? [:]).keys)
        XCTAssertEqual(keys, ["database-url", "anthropic-api-key"])

        /// The secret keys a container's environment takes, by variable.
        func secretKeys(_ container: [String: Any]) -> [String: String] {
            var found: [String: String] = [:]
            for variable in container["env"] as? [[String: Any]] ?? [] {
                guard let name = variable["name"] as? String,
                    let ref = (variable["valueFrom"] as? [String: Any])?["secretKeyRef"] as? [String: Any]
                else { continue }
                XCTAssertEqual(ref["name"] as? String, "xclaw", name)
                found[name] = ref["key"] as? String
            }
            return found
        }

        // The workers: the image's entrypoint with their arguments, the secrets, readiness by heartbeat.
        let workers = try document(docs, "Deployment", "xclaw-worker")
        let worker = try container(workers)
        XCTAssertNil(worker["command"], "the workers run the image's entrypoint")
        let zone = ((worker["env"] as? [[String: Any]]) ?? []).first { $0["name"] as? String == "NODE_ZONE" }?["value"]
        let arguments = ((worker["args"] as? [String]) ?? []).map {
            $0.replacingOccurrences(of: "$(NODE_ZONE)", with: zone as? String ?? "")
        }
        assertXclawAccepts(try entrypoint() + arguments)
        XCTAssertEqual(
            secretKeys(worker), ["XCLAW_DATABASE_URL": "database-url", "ANTHROPIC_API_KEY": "anthropic-api-key"])
        let readiness = try XCTUnwrap(
            ((worker["readinessProbe"] as? [String: Any])?["exec"] as? [String: Any])?["command"] as? [String])
        XCTAssertEqual(readiness, ["/usr/local/bin/xclaw", "fleet", "ready"])
        assertXclawAccepts(readiness)
        let liveness = try XCTUnwrap(
            ((worker["livenessProbe"] as? [String: Any])?["exec"] as? [String: Any])?["command"] as? [String])
        assertXclawAccepts(liveness)
        let podSpec = ((workers["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any]
        XCTAssertGreaterThanOrEqual(
            podSpec?["terminationGracePeriodSeconds"] as? Int ?? 0, 60, "runs in flight get time to finish")

        // The migration Job.
        let migrate = try container(try document(docs, "Job", "xclaw-migrate"))
        let migration = try XCTUnwrap(migrate["command"] as? [String])
        XCTAssertEqual(Array(migration.dropFirst()), ["db", "migrate", "--json"])
        assertXclawAccepts(migration)
        XCTAssertEqual(secretKeys(migrate), ["XCLAW_DATABASE_URL": "database-url"])

        // The web view behind a Service whose selector and port match its Deployment.
        let webDeployment = try document(docs, "Deployment", "xclaw-web")
        let web = try container(webDeployment)
        let webCommand = try XCTUnwrap(web["command"] as? [String])
        assertXclawAccepts(webCommand)
        XCTAssertTrue(webCommand.contains("0.0.0.0:7878"), "\(webCommand)")
        let service = try document(docs, "Service", "xclaw-web")
        let selector = (service["spec"] as? [String: Any])?["selector"] as? [String: String] ?? [:]
        let labels =
            (((webDeployment["spec"] as? [String: Any])?["template"] as? [String: Any])?["metadata"]
            as? [String: Any])?["labels"] as? [String: String] ?? [:]
        XCTAssertFalse(selector.isEmpty)
        XCTAssertTrue(selector.allSatisfy { labels[$0.key] == $0.value }, "the Service selects the web pods")
        XCTAssertEqual(
            ((service["spec"] as? [String: Any])?["ports"] as? [[String: Any]])?.first?["port"] as? Int, 7878)
    }

    func testTheSystemdUnitRunsAWorkerWithItsSecretsInAFile() throws {
        let script = """
            import configparser, json, sys
            unit = configparser.ConfigParser(strict=False, interpolation=None)
            unit.optionxform = str
            unit.read(sys.argv[1])
            print(json.dumps({s: dict(unit[s]) for s in unit.sections()}))
            """
        let outcome = try Subprocess.run(
            [
                "/usr/bin/python3", "-c", script,
                Self.deploy.appendingPathComponent("systemd/xclaw-worker.service").path,
            ],
            timeout: .seconds(30))
        XCTAssertEqual(outcome.ending, .exited(0), String(decoding: outcome.stderr, as: UTF8.self))
        let unit = try XCTUnwrap(try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: [String: String]])
        XCTAssertEqual(Set(unit.keys), ["Unit", "Service", "Install"])
        let service = try XCTUnwrap(unit["Service"])
        XCTAssertEqual(service["EnvironmentFile"], "/etc/xclaw/worker.env", "secrets come from a file, not the unit")
        XCTAssertEqual(service["KillSignal"], "SIGTERM")
        XCTAssertEqual(service["Restart"], "on-failure")
        for key in ["ExecStart", "ExecStartPre"] {
            let command = (service[key] ?? "").split(separator: " ").map(String.init).map {
                $0 == "%H" ? "host-name" : $0
            }
            assertXclawAccepts(command)
        }
        XCTAssertTrue(service["ExecStart"]?.contains("daemon run --worker") ?? false)
    }
}
