/**
 * The families' trap tables against their MIBs' text (docs/events.md, "What each family's table
 * reads"): each trap is built as its agent sends it, with the trap OID of its TRAP-TYPE or
 * NOTIFICATION-TYPE and the varbinds its VARIABLES or OBJECTS list (OIDs from PowerNet-MIB,
 * PDU2-MIB, Sentry4-MIB, Sentry3-MIB, CPS-MIB and EATON-EPDU-MIB), and must become the event the
 * MIB's DESCRIPTION says.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { trapEvent } from "../../src/pdu/drivers.js";
import type { TrapEvent, TrapVarbind } from "../../src/pdu/trap-events.js";

const v = (oid: string, value: number | string | null): TrapVarbind => ({ oid, value });
const event = (trapOid: string, ...varbinds: TrapVarbind[]): TrapEvent => trapEvent({ trapOid, varbinds });
const expect = (got: TrapEvent, want: Partial<TrapEvent>) =>
  assert.deepEqual(
    Object.fromEntries(Object.keys(want).map((k) => [k, got[k as keyof TrapEvent]])),
    want,
    `${got.trap}: ${JSON.stringify(got)}`,
  );

describe("APC PowerNet-MIB", () => {
  const APC = "1.3.6.1.4.1.318";
  const ident = [v(`${APC}.1.1.12.1.6.0`, "ZA1036E02224"), v(`${APC}.1.1.12.1.1.0`, "Grand POP PDU R15 A1")];

  it("rPDUOutletOn/Off (268, 269): the outlet is rPDUOutletControlIndex's value, the label its OutletName", () => {
    const varbinds = [
      ...ident,
      v(`${APC}.1.1.12.3.3.1.1.1.0`, 7),
      v(`${APC}.1.1.12.3.3.1.1.2.0`, "web-07"),
      v(`${APC}.2.3.3.0`, "Outlet 7 turned off"),
    ];
    expect(event(`${APC}.0.269`, ...varbinds), {
      kind: "outlet-switched",
      trap: "rPDUOutletOff",
      outlet: 7,
      state: "off",
      label: "web-07",
    });
    expect(event(`${APC}.0.268`, ...varbinds), { trap: "rPDUOutletOn", outlet: 7, state: "on" });
  });

  it("outletOn/Off/Reboot (41-43): the MasterSwitch's outlet in mtrapargsInteger, 0 (every outlet) no one outlet", () => {
    expect(event(`${APC}.0.42`, v(`${APC}.2.3.1.0`, 2), v(`${APC}.2.3.3.0`, "An outlet has turned off.")), {
      kind: "outlet-switched",
      trap: "outletOff",
      outlet: 2,
      state: "off",
    });
    expect(event(`${APC}.0.43`, v(`${APC}.1.1.4.4.2.1.1.3`, 3)), {
      trap: "outletReboot",
      outlet: 3,
      state: "reboot",
    });
    expect(event(`${APC}.0.41`, v(`${APC}.2.3.1.0`, 0)), { trap: "outletOn", outlet: null, state: "on" });
  });

  it("rPDUNearOverload, rPDUOverload, rPDULowLoad and their clears are load states of a phase, not of an outlet", () => {
    const phase = [
      ...ident,
      v(`${APC}.1.1.12.2.3.1.1.4.0`, 1),
      v(`${APC}.2.3.3.0`, "Metered Rack PDU: Near overload."),
    ];
    expect(event(`${APC}.0.274`, ...phase), {
      kind: "load-state",
      trap: "rPDUNearOverload",
      outlet: null,
      state: "warning",
    });
    expect(event(`${APC}.0.276`, ...phase), { trap: "rPDUOverload", state: "critical" });
    expect(event(`${APC}.0.277`, ...phase), { trap: "rPDUOverloadCleared", state: "normal" });
    expect(event(`${APC}.0.272`, ...phase), { trap: "rPDULowLoad", state: "low" });
    expect(event(`${APC}.0.226`, ...phase), {
      trap: "rPDUBankPhaseOverload",
      kind: "load-state",
      state: "critical",
    });
  });

  it("rPDUOutletOverload (634): the outlet from rPDUOutletStatusIndex", () => {
    expect(event(`${APC}.0.634`, ...ident, v(`${APC}.1.1.12.3.5.1.1.1.0`, 12)), {
      kind: "load-state",
      trap: "rPDUOutletOverload",
      outlet: 12,
      state: "critical",
    });
  });
});

describe("Raritan PDU2-MIB", () => {
  const P = "1.3.6.1.4.1.13742.6";
  const typeOf = (t: number) => v(`${P}.0.0.10`, t);

  it("outletSensorStateChange of an onOff sensor: the outlet switched, from the sensor's row", () => {
    expect(event(`${P}.0.63`, v(`${P}.3.5.3.1.2.1.4`, "db-04"), typeOf(14), v(`${P}.5.4.3.1.3.1.4.14`, 8)), {
      kind: "outlet-switched",
      trap: "outletSensorStateChange",
      outlet: 4,
      state: "off",
      label: "db-04",
    });
  });

  it("outletSensorStateChange of a current sensor is a load state, not a switch", () => {
    expect(event(`${P}.0.63`, typeOf(1), v(`${P}.5.4.3.1.3.1.4.1`, 5)), {
      kind: "load-state",
      outlet: 4,
      state: "warning",
    });
  });

  it("overCurrentProtectorSensorStateChange: a trip sensor open is tripped, closed is closed; its current a load state", () => {
    const trip = (state: number) =>
      event(`${P}.0.65`, v(`${P}.3.4.3.1.2.1.2`, "C2"), typeOf(15), v(`${P}.5.3.3.1.3.1.2.15`, state));
    expect(trip(0), { kind: "breaker-tripped", state: "tripped", outlet: null, label: "C2" });
    expect(trip(1), { kind: "breaker-tripped", state: "closed" });
    expect(event(`${P}.0.65`, typeOf(1), v(`${P}.5.3.3.1.3.1.2.1`, 6)), {
      kind: "load-state",
      state: "critical",
    });
  });

  it("systemStarted (1) and systemReset (2) are the unit restarting; powerControl (23) the operation asked", () => {
    expect(event(`${P}.0.1`), { kind: "unit-restarted", trap: "systemStarted" });
    expect(event(`${P}.0.2`), { kind: "unit-restarted", trap: "systemReset" });
    expect(event(`${P}.0.23`, v(`${P}.5.4.3.1.3.1.9.14`, 8), v(`${P}.4.1.2.1.2.1.9`, 2)), {
      kind: "outlet-switched",
      trap: "powerControl",
      outlet: 9,
      state: "cycle",
    });
    // userLogin (3) is no event the tables name.
    expect(event(`${P}.0.3`), { kind: "other", trap: `${P}.0.3` });
  });
});

describe("Raritan PDU-MIB (PX)", () => {
  const X = "1.3.6.1.4.1.13742.4";
  it("powerControl (23): outletOperationalState's row and outletLabel; circuitBreakerTripped (51) and …Recovered (52)", () => {
    expect(event(`${X}.0.23`, v(`${X}.1.2.2.1.2.6`, "fw-06"), v(`${X}.1.2.2.1.3.6`, 0)), {
      kind: "outlet-switched",
      trap: "powerControl",
      outlet: 6,
      state: "off",
      label: "fw-06",
    });
    expect(event(`${X}.0.51`, v(`${X}.1.5.2.1.2.1`, "CB1")), {
      kind: "breaker-tripped",
      state: "tripped",
      label: "CB1",
    });
    expect(event(`${X}.0.52`), { kind: "breaker-tripped", state: "closed" });
    expect(event(`${X}.0.2`), { kind: "unit-restarted", trap: "rebootCompleted" });
  });
});

describe("ServerTech Sentry4-MIB", () => {
  const S = "1.3.6.1.4.1.1718.4";
  it("st4OutletStateChangeEvent (16): outlet (cord − 1) × 128 + outlet, DeviceState on(1)/off(2)", () => {
    expect(
      event(
        `${S}.100.0.16`,
        v(`${S}.1.8.2.1.2.1.2.3`, "AB3"),
        v(`${S}.1.8.2.1.3.1.2.3`, "san-a"),
        v(`${S}.1.8.3.1.1.1.2.3`, 2),
      ),
      { kind: "outlet-switched", outlet: 131, state: "off", label: "san-a" },
    );
  });
  it("st4OcpStatusEvent (12): breakerTripped(12) is tripped; st4OutletCurrentEvent (17) a load state", () => {
    expect(event(`${S}.100.0.12`, v(`${S}.1.6.2.1.4.1.1.2`, "CB2"), v(`${S}.1.6.3.1.1.1.1.2`, 12)), {
      kind: "breaker-tripped",
      state: "tripped",
      label: "CB2",
    });
    expect(event(`${S}.100.0.17`, v(`${S}.1.8.3.1.4.1.1.5`, 17)), {
      kind: "load-state",
      outlet: 5,
      state: "critical",
    });
  });
});

describe("ServerTech Sentry3-MIB", () => {
  const S = "1.3.6.1.4.1.1718.3";
  it("outletChangeEvent (6): outlet (infeed − 1) × 64 + outlet, an on or off outletStatus", () => {
    expect(
      event(
        `${S}.100.0.6`,
        v(`${S}.2.3.1.2.1.2.5`, "AB5"),
        v(`${S}.2.3.1.3.1.2.5`, "nas"),
        v(`${S}.2.3.1.5.1.2.5`, 0),
      ),
      { kind: "outlet-switched", trap: "outletChangeEvent", outlet: 69, state: "off", label: "nas" },
    );
    expect(event(`${S}.100.0.6`, v(`${S}.2.3.1.5.1.1.5`, 3)), { outlet: 5, state: "on" });
  });
  it("branchStatusEvent (14): offFuse/onFuse is the branch tripped; outletLoadEvent (5) a load state", () => {
    expect(event(`${S}.100.0.14`, v(`${S}.2.7.1.3.1.1.1`, "Branch A"), v(`${S}.2.7.1.5.1.1.1`, 9)), {
      kind: "breaker-tripped",
      state: "tripped",
      label: "Branch A",
    });
    expect(event(`${S}.100.0.14`, v(`${S}.2.7.1.5.1.1.1`, 1)), { state: "normal" });
    expect(event(`${S}.100.0.5`, v(`${S}.2.3.1.6.1.1.2`, 5)), {
      kind: "load-state",
      outlet: 2,
      state: "critical",
    });
  });
});

describe("CyberPower CPS-MIB", () => {
  const C = "1.3.6.1.4.1.3808";
  it("ePDUOutletOn/Off (102, 103): ePDUOutletControlIndex's value and the outlet's name", () => {
    expect(event(`${C}.0.103`, v(`${C}.1.1.3.3.3.1.1.1.0`, 4), v(`${C}.1.1.3.3.3.1.1.2.0`, "nas-02")), {
      kind: "outlet-switched",
      trap: "ePDUOutletOff",
      outlet: 4,
      state: "off",
      label: "nas-02",
    });
  });
  it("pduOutletSwitchedEvent (409): the outlet's number, no state (the text says it; the poll reads it)", () => {
    expect(
      event(
        `${C}.0.409`,
        v(`${C}.1.1.6.6.1.5.1.1.6`, 6),
        v(`${C}.1.1.6.6.1.5.1.3.6`, 6),
        v(`${C}.2.2.3.0`, "Outlet 6 on"),
      ),
      {
        kind: "outlet-switched",
        outlet: 6,
        state: null,
      },
    );
  });
  it("the bank and outlet load traps", () => {
    expect(event(`${C}.0.128`, v(`${C}.1.1.3.2.3.1.1.5.0`, 1)), {
      kind: "load-state",
      trap: "ePDUBankOverload",
      outlet: null,
      state: "critical",
    });
    expect(event(`${C}.0.134`, v(`${C}.1.1.3.3.4.3.1.3.0`, 3)), {
      trap: "ePDUOutletNearOverload",
      outlet: 3,
      state: "warning",
    });
  });
});

describe("Eaton EATON-EPDU-MIB", () => {
  const E = "1.3.6.1.4.1.534.6.6.7";
  it("notifyOutletControlStatus (33), notifyGroupBreakerStatus (23), notifyOutletCurrentThStatus (32)", () => {
    expect(event(`${E}.0.33`, v(`${E}.1.2.1.1.0`, 0), v(`${E}.6.1.1.1.0.5`, 5), v(`${E}.6.6.1.2.0.5`, 0)), {
      kind: "outlet-switched",
      outlet: 5,
      state: "off",
    });
    expect(event(`${E}.0.23`, v(`${E}.5.1.1.5.0.2`, 2)), { kind: "breaker-tripped", state: "tripped" });
    expect(event(`${E}.0.32`, v(`${E}.6.4.1.4.0.3`, 4)), {
      kind: "load-state",
      outlet: 3,
      state: "critical",
    });
  });
});

describe("hostile contents", () => {
  it("a label that breaks the rule for display text, or blank, is no label; a number where text belongs none either", () => {
    const APC = "1.3.6.1.4.1.318";
    const off = (label: string | number) =>
      event(`${APC}.0.269`, v(`${APC}.1.1.12.3.3.1.1.1.0`, 1), v(`${APC}.1.1.12.3.3.1.1.2.0`, label));
    expect(off("evil\u202Egpj.exe"), { label: null, outlet: 1 });
    expect(off("bell\u0007"), { label: null });
    expect(off("   "), { label: null });
    expect(off(42), { label: null });
    expect(off("<img src=x onerror=alert(1)>"), { label: "<img src=x onerror=alert(1)>" });
  });
  it("an outlet number that is text, negative, fractional or past the bounds is no outlet", () => {
    const APC = "1.3.6.1.4.1.318";
    for (const n of ["3", -1, 2.5, 4097, 2 ** 31 - 1])
      expect(event(`${APC}.0.268`, v(`${APC}.1.1.12.3.3.1.1.1.0`, n)), { outlet: null, state: "on" });
  });
});
