package dev.outboxinbox.system;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * A real browser for the demo page's test: Chromium, headless, through ChromeDriver, both from the
 * machine (Debian: apt-get install chromium chromium-driver; elsewhere set CHROME_BINARY and
 * CHROMEDRIVER). Nothing is downloaded: the flags keep Chromium off the network but for the page.
 */
final class DemoBrowser {

    private DemoBrowser() {
    }

    static WebDriver open() {
        String binary = System.getenv().getOrDefault("CHROME_BINARY", "/usr/bin/chromium");
        String driver = System.getenv().getOrDefault("CHROMEDRIVER", "/usr/bin/chromedriver");
        if (!new File(binary).canExecute() || !new File(driver).canExecute()) {
            throw new IllegalStateException("the demo page is tested in Chromium: install it and its driver"
                    + " (Debian/Ubuntu: apt-get install chromium chromium-driver) or set CHROME_BINARY and CHROMEDRIVER;"
                    + " looked for " + binary + " and " + driver);
        }
        ChromeOptions options = new ChromeOptions();
        options.setBinary(binary);
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1400,2000");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(driver))
                .usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }

    static void screenshot(WebDriver browser, Path png) throws IOException {
        File taken = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
        Files.copy(taken.toPath(), png, StandardCopyOption.REPLACE_EXISTING);
    }
}
