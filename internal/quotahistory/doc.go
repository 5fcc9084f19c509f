// Package quotahistory says what a ResourceQuota's usage was over the sizing window, so that the
// quota detector (internal/detect/quota) can size a quota from its peak and give back what a
// team no longer uses.
//
// Window is the one answer every history source gives: the peak of each resource over the
// window, when it happened, and whether the history covers the whole window. A window that is
// not complete never looks like low usage: the detector holds a shrink back with gate "window".
package quotahistory
