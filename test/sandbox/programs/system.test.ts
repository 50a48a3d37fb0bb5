import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupTemp } from "../../helpers/workspace.js";
import { decide, programsWorkspace, reached } from "./helpers.js";

let ws: string;
beforeAll(() => {
  ws = programsWorkspace();
});
afterAll(() => cleanupTemp());

describe("privilege, administration and system packages", () => {
  it("refuses privilege changes and still walks what they would run", () => {
    expect(decide(ws, "sudo -u root -E id")).toEqual(["deny", "priv.escalation"]);
    expect(reached("sudo -u root X=1 ls")).toEqual(["ls (sudo)"]);
    expect(reached("doas -u x ls")).toEqual(["ls (doas)"]);
    expect(reached("pkexec --user x ls")).toEqual(["ls (pkexec)"]);
    expect(reached("su -c 'rm -rf /' root")).toEqual(["rm (su -c)"]);
    expect(reached("runuser -u x -- ls")).toEqual(["ls (runuser)"]);
    expect(decide(ws, "setpriv --reuid=0 id")).toEqual(["deny", "priv.escalation"]);
  });

  it("refuses administration (by normalized name) and asks for system package managers", () => {
    expect(decide(ws, "mount /dev/sda /mnt")).toEqual(["deny", "system.admin"]);
    expect(decide(ws, "mkfs.ext4 /dev/sda")).toEqual(["deny", "system.admin"]);
    expect(decide(ws, "crontab -l")).toEqual(["deny", "system.admin"]);
    expect(decide(ws, "apt-get install -y jq")).toEqual(["ask", "pkg.system"]);
  });
});
